using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// Content-hash tags of large files are computed in the background, one file at a time per root. A request that waits
/// for a tag must not wait for other files' hashes queued before its own, and every form of a path sees a change.
/// </summary>
public sealed class ContentHashWaitTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    [Fact]
    public async Task A_conditional_request_does_not_wait_for_another_files_hash()
    {
        // Sparse: 16 GiB of zeros to hash (several seconds at any SHA-256 speed), no disk used. Both files are over
        // MaxCachedFileSize, so hashed in the background.
        using (FileStream big = File.Create(_files.PathOf("big.iso")))
        {
            big.SetLength(16L * 1024 * 1024 * 1024);
        }

        byte[] first = _files.Create("other.bin", 200_000);
        await using TestHost host = await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true, EnableContentHashETags = true }),
            services => services.AddFastFiles());

        string tag = await TagOfAsync(host, "/other.bin");

        // The big file's hash takes the root's turn; then other.bin changes, and its new hash queues behind.
        using (HttpResponseMessage head = await host.SendAsync(Transport.Http11, "/big.iso", null, HttpMethod.Head))
        {
            Assert.Equal(HttpStatusCode.OK, head.StatusCode);
            Assert.Null(head.Headers.ETag);
        }

        byte[] second = _files.Create("other.bin", 200_000, seed: 7);
        await PollUntilServedAsync(host, "/other.bin", second);

        // The revalidation needs other.bin's new tag: it is answered (200, the new tag) while big.iso's hash still runs.
        using HttpResponseMessage revalidation = await host.SendAsync(Transport.Http11, "/other.bin", m => m.Headers.TryAddWithoutValidation("If-None-Match", tag));
        Assert.Equal(HttpStatusCode.OK, revalidation.StatusCode);
        Assert.NotNull(revalidation.Headers.ETag);
        Assert.NotEqual(tag, revalidation.Headers.ETag!.ToString());
        using HttpResponseMessage stillHashing = await host.SendAsync(Transport.Http11, "/big.iso", null, HttpMethod.Head);
        Assert.Null(stillHashing.Headers.ETag);
    }

    [Fact]
    public async Task Every_form_of_a_path_gets_the_new_hash_after_a_change()
    {
        _files.Create("fp.css", 5_000);
        await using TestHost host = await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), EnableContentHashETags = true }),
            // No revalidation to hide a stale entry: only the watcher drops entries.
            services => services.AddFastFiles(o => o.FileCacheRevalidationInterval = TimeSpan.FromHours(1)));
        IFastFilesFingerprinter fingerprints = host.Services.GetRequiredService<IFastFilesFingerprinter>();
        // The URL keeps the form it was asked for; the hash after "?v=" is the file's.
        static string HashOf(string url) => url[(url.IndexOf("?v=", StringComparison.Ordinal) + 3)..];
        string before = HashOf(await fingerprints.GetUrlAsync("/fp.css"));
        Assert.Equal(before, HashOf(await fingerprints.GetUrlAsync("//fp.css")));

        _files.Create("fp.css", 5_000, seed: 9);
        string after = before;
        for (int i = 0; i < 200 && after == before; i++)
        {
            await Task.Delay(50);
            after = HashOf(await fingerprints.GetUrlAsync("/fp.css"));
        }

        Assert.NotEqual(before, after);
        Assert.Equal(after, HashOf(await fingerprints.GetUrlAsync("//fp.css")));
        Assert.Equal(after, HashOf(await fingerprints.GetUrlAsync("///fp.css")));
    }

    private static async Task<string> TagOfAsync(TestHost host, string path)
    {
        for (int i = 0; i < 600; i++)
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, path, m => m.Headers.Range = new System.Net.Http.Headers.RangeHeaderValue(0, 0));
            if (response.Headers.ETag is { } tag)
            {
                return tag.ToString();
            }

            await Task.Delay(50);
        }

        throw new TimeoutException($"{path} got no tag.");
    }

    private static async Task PollUntilServedAsync(TestHost host, string path, byte[] expected)
    {
        for (int i = 0; i < 200; i++)
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, path);
            if ((await response.Content.ReadAsByteArrayAsync()).AsSpan().SequenceEqual(expected))
            {
                return;
            }

            await Task.Delay(50);
        }

        throw new TimeoutException($"{path} was not served anew.");
    }
}
