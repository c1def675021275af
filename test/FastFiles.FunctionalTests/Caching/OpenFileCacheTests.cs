using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Caching;

/// <summary>
/// Descriptors of large files kept open across requests (<see cref="FastFilesOptions.MaxOpenFiles"/>): shared by
/// concurrent responses, never used for a version the cache knows is gone, bounded, and closed when the app stops.
/// </summary>
public sealed class OpenFileCacheTests : IAsyncLifetime
{
    // Larger than any socket buffer and HTTP/2 window on loopback, so a response whose client stops reading stays in flight.
    private const int StallingLength = 32 * 1024 * 1024;
    private static readonly TimeSpan Eventually = TimeSpan.FromSeconds(10);
    private readonly TestFiles _files = new();
    private TestHost? _host;

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        if (_host is not null)
        {
            await _host.DisposeAsync();
        }

        await ResponseHeaders.AssertNoOpenFilesUnderAsync(_files.Root);
        _files.Dispose();
    }

    private async Task<TestHost> StartAsync(int maxOpenFiles)
        => _host = await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true }),
            services => services.AddFastFiles(o => o.MaxOpenFiles = maxOpenFiles));

    public static TheoryData<string, int, int> Sharing() => new()
    {
        { "http/1.1", 1024, 1 },
        { "h2c", 1024, 1 },
        { "h2", 1024, 1 },
        // The control: without the open-file cache each response opens its own descriptor.
        { "http/1.1", 0, 2 },
    };

    // HTTP/1.1 on the copying endpoint: the zero-copy send path reopens a descriptor of its own for a client that
    // stops reading (see SendPathWriter), which is not what this test counts.
    private static HttpRequestMessage Request(TestHost host, string protocol, string path) => protocol switch
    {
        "h2c" => host.Request(Transport.H2c, path),
        "h2" => host.Request(Transport.H2Tls, path),
        _ => new HttpRequestMessage(HttpMethod.Get, new Uri(host.HttpCopy, path)) { Version = HttpVersion.Version11, VersionPolicy = HttpVersionPolicy.RequestVersionExact },
    };

    [Theory]
    [MemberData(nameof(Sharing))]
    public async Task Concurrent_responses_share_one_kept_descriptor(string protocol, int maxOpenFiles, int expectedDescriptors)
    {
        byte[] content = _files.Create("big.bin", StallingLength);
        TestHost host = await StartAsync(maxOpenFiles);

        // Two responses whose clients read one chunk and stop: both bodies are being read from disk at once.
        using HttpResponseMessage first = await host.Client.SendAsync(Request(host, protocol, "/big.bin"), HttpCompletionOption.ResponseHeadersRead);
        using HttpResponseMessage second = await host.Client.SendAsync(Request(host, protocol, "/big.bin"), HttpCompletionOption.ResponseHeadersRead);
        Assert.Equal(HttpStatusCode.OK, first.StatusCode);
        await using Stream firstBody = await first.Content.ReadAsStreamAsync();
        await using Stream secondBody = await second.Content.ReadAsStreamAsync();
        var buffer = new byte[64 * 1024];
        int firstRead = await firstBody.ReadAtLeastAsync(buffer, 1);
        int secondRead = await secondBody.ReadAtLeastAsync(buffer, 1);
        Assert.True(firstRead > 0 && secondRead > 0);

        Assert.Equal(expectedDescriptors, OpenFileDescriptors.CountUnder(_files.Root));

        // Both bodies are still the whole file, byte for byte.
        var firstRest = new MemoryStream();
        var secondRest = new MemoryStream();
        await Task.WhenAll(firstBody.CopyToAsync(firstRest), secondBody.CopyToAsync(secondRest));
        Assert.Equal(StallingLength - firstRead, firstRest.Length);
        Assert.Equal(StallingLength - secondRead, secondRest.Length);
        Assert.True(content.AsSpan(firstRead).SequenceEqual(firstRest.GetBuffer().AsSpan(0, (int)firstRest.Length)));
        Assert.True(content.AsSpan(secondRead).SequenceEqual(secondRest.GetBuffer().AsSpan(0, (int)secondRest.Length)));
    }

    [Theory]
    [InlineData(Transport.Http11)]
    [InlineData(Transport.H2c)]
    [InlineData(Transport.H2Tls)]
    public async Task A_file_replaced_by_rename_is_never_served_from_its_old_descriptor(Transport transport)
    {
        byte[] v1 = _files.Create("big.bin", 1024 * 1024, seed: 1);
        TestHost host = await StartAsync(1024);
        Assert.Equal(v1, await GetBodyAsync(host, transport, "/big.bin"));
        Assert.Equal(1, OpenFileDescriptors.CountUnder(_files.Root));

        byte[] v2 = _files.Create("big.bin.tmp", 1024 * 1024, seed: 2);
        File.Move(_files.PathOf("big.bin.tmp"), _files.PathOf("big.bin"), overwrite: true);

        DateTime deadline = DateTime.UtcNow + Eventually;
        byte[] body;
        while (!(body = await GetBodyAsync(host, transport, "/big.bin")).SequenceEqual(v2) && DateTime.UtcNow < deadline)
        {
            Assert.Equal(v1, body);
            await Task.Delay(20);
        }

        Assert.Equal(v2, body);
        // The old version's descriptor is closed (nothing open points at a deleted file), and once the new version
        // is served the old one never is again.
        await ResponseHeaders.AssertAtMostCachedFilesOpenUnderAsync(_files.Root);
        for (int i = 0; i < 5; i++)
        {
            Assert.Equal(v2, await GetBodyAsync(host, transport, "/big.bin"));
        }
    }

    [Fact]
    public async Task An_in_place_rewrite_is_caught_by_the_descriptor_stamp_and_every_response_is_one_version()
    {
        byte[] v1 = _files.Create("big.bin", 512 * 1024, seed: 1);
        TestHost host = await StartAsync(1024);
        using HttpResponseMessage before = await host.SendAsync(Transport.Http11, "/big.bin");
        Assert.Equal(v1, await before.Content.ReadAsByteArrayAsync());
        string? v1Tag = before.Headers.ETag?.Tag;

        // Same inode, same size: the kept descriptor now reads the new bytes; its stamp (fstat) no longer matches.
        DateTime modified = File.GetLastWriteTimeUtc(_files.PathOf("big.bin"));
        byte[] v2;
        do
        {
            await Task.Delay(5);
            v2 = _files.Create("big.bin", 512 * 1024, seed: 2);
        }
        while (File.GetLastWriteTimeUtc(_files.PathOf("big.bin")) == modified);

        DateTime deadline = DateTime.UtcNow + Eventually;
        while (true)
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/big.bin");
            byte[] body = await response.Content.ReadAsByteArrayAsync();
            string? tag = response.Headers.ETag?.Tag;
            if (body.SequenceEqual(v2))
            {
                Assert.NotEqual(v1Tag, tag);
                break;
            }

            // Still the old version: then with the old validator, never new bytes under an old tag or a mix.
            Assert.Equal(v1, body);
            Assert.Equal(v1Tag, tag);
            Assert.True(DateTime.UtcNow < deadline, "the rewrite was never seen");
            await Task.Delay(20);
        }
    }

    [Fact]
    public async Task Kept_descriptors_stay_within_the_limit()
    {
        const int Files = 6;
        var contents = new byte[Files][];
        for (int i = 0; i < Files; i++)
        {
            contents[i] = _files.Create($"f{i}.bin", 256 * 1024, seed: i);
        }

        TestHost host = await StartAsync(2);
        for (int round = 0; round < 2; round++)
        {
            for (int i = 0; i < Files; i++)
            {
                Assert.Equal(contents[i], await GetBodyAsync(host, Transport.Http11, $"/f{i}.bin"));
                Assert.True(OpenFileDescriptors.CountUnder(_files.Root) <= 2, $"{OpenFileDescriptors.CountUnder(_files.Root)} open");
            }
        }
    }

    [Fact]
    public async Task Small_files_served_from_memory_keep_no_descriptor()
    {
        byte[] small = _files.Create("small.bin", 4096);
        TestHost host = await StartAsync(1024);
        for (int i = 0; i < 3; i++)
        {
            Assert.Equal(small, await GetBodyAsync(host, Transport.Http11, "/small.bin"));
        }

        Assert.Equal(0, OpenFileDescriptors.CountUnder(_files.Root));
    }

    private static async Task<byte[]> GetBodyAsync(TestHost host, Transport transport, string path)
    {
        using HttpResponseMessage response = await host.SendAsync(transport, path);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        return await response.Content.ReadAsByteArrayAsync();
    }
}
