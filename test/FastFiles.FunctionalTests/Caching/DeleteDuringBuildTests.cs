using System.Net.Sockets;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Caching;

/// <summary>
/// A file deleted while its first request builds the cache entry: the watcher's event can land before the entry is in
/// the cache (nothing to drop yet) or after (it drops it). Either way no descriptor of the deleted file may stay open
/// until someone asks for the path again.
/// </summary>
public sealed class DeleteDuringBuildTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    [Fact]
    public async Task A_file_deleted_while_its_entry_is_built_leaves_no_descriptor_open()
    {
        await using TestHost host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(_files.Root),
            ServeUnknownFileTypes = true,
        }));

        // Over the largest cached body: the entry keeps the file's descriptor instead of its bytes.
        var payload = new byte[200_000];
        var random = new Random(7);
        int answered = 0, missing = 0;
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        using Socket socket = await RawHttp.ConnectAsync(host.HttpCopy);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        for (int i = 0; i < 300; i++)
        {
            string name = $"f{i}.bin";
            File.WriteAllBytes(_files.PathOf(name), payload);

            // The request is on its way; the delete lands anywhere from before the open to after the response.
            Task<RawResponse> request = RawHttp.ExchangeAsync(stream, "/" + name, timeout.Token, method: "HEAD");
            Thread.SpinWait(random.Next(0, 100_000));
            File.Delete(_files.PathOf(name));
            int status = (await request).Status;
            Assert.True(status is 200 or 404, $"/{name}: {status}");
            answered += status == 200 ? 1 : 0;
            missing += status == 404 ? 1 : 0;
        }

        // Both sides of the race were run: some requests found their file, some came after its delete.
        Assert.True(answered > 0 && missing > 0, $"{answered} found, {missing} not found");
        await OpenFileDescriptors.AssertNoneUnderAsync(_files.Root);
    }
}
