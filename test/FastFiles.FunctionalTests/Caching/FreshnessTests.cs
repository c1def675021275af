using System.Collections.Concurrent;
using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Caching;

/// <summary>
/// The cache must see changes (in-place writes, atomic replacement, deletion, creation) and must never serve a
/// body that is not one real version of the file, or headers that do not describe the body.
/// </summary>
public sealed class FreshnessTests : IAsyncLifetime
{
    // Correctness bound for "eventually": far above the 1 s revalidation interval; never a timing claim.
    private static readonly TimeSpan Eventually = TimeSpan.FromSeconds(10);
    private readonly TestFiles _files = new();
    private TestHost _host = null!;

    public async Task InitializeAsync()
    {
        _host = await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true }),
            services => services.AddFastFiles());
    }

    public async Task DisposeAsync()
    {
        await _host.DisposeAsync();
        _files.Dispose();
    }

    private async Task<(HttpStatusCode Status, byte[] Body, string? ETag)> GetAsync(string path)
    {
        using HttpResponseMessage response = await _host.SendAsync(Transport.Http11, path);
        byte[] body = await response.Content.ReadAsByteArrayAsync();
        return (response.StatusCode, body, response.Headers.ETag?.Tag);
    }

    private Task<(HttpStatusCode Status, byte[] Body, string? ETag)> EventuallyAsync(string path, Func<(HttpStatusCode Status, byte[] Body, string? ETag), bool> done)
        => Poll.EventuallyAsync(() => GetAsync(path), done, Eventually);

    [Fact]
    public async Task Same_size_rewrite_within_one_second_is_seen_with_a_new_etag()
    {
        byte[] v1 = _files.Create("same.txt", 2048, seed: 1);
        var first = await GetAsync("/same.txt");
        Assert.Equal(v1, first.Body);

        // Within one second, but on a later file-system clock tick: kernels before 6.13 stamp writes from a clock
        // that advances every few milliseconds, and two writes in one tick are indistinguishable to any stat.
        DateTime before = File.GetLastWriteTimeUtc(_files.PathOf("same.txt"));
        byte[] v2;
        do
        {
            await Task.Delay(5);
            v2 = _files.Create("same.txt", 2048, seed: 2);
        }
        while (File.GetLastWriteTimeUtc(_files.PathOf("same.txt")) == before);

        var second = await EventuallyAsync("/same.txt", r => r.Body.SequenceEqual(v2));
        Assert.Equal(v2, second.Body);
        // Nanosecond modification times make the two same-second versions different validators.
        Assert.NotEqual(first.ETag, second.ETag);
    }

    [Fact]
    public async Task Rewrite_that_restores_the_modification_time_is_still_seen()
    {
        byte[] v1 = _files.Create("restored.txt", 2048, seed: 1);
        Assert.Equal(v1, (await GetAsync("/restored.txt")).Body);

        // Same length and mtime put back (as cp -p or touch -d would): only the change time, inode-level
        // notifications and the content itself differ. The cache must still drop the old bytes.
        DateTime mtime = File.GetLastWriteTimeUtc(_files.PathOf("restored.txt"));
        // A later change-time tick (see above), so the stamp differs even where change notifications are unavailable.
        await Task.Delay(50);
        byte[] v2 = _files.Create("restored.txt", 2048, seed: 2);
        File.SetLastWriteTimeUtc(_files.PathOf("restored.txt"), mtime);

        var second = await EventuallyAsync("/restored.txt", r => r.Body.SequenceEqual(v2));
        Assert.Equal(v2, second.Body);
    }

    [Fact]
    public async Task Atomic_replace_delete_and_create_are_seen()
    {
        byte[] v1 = _files.Create("r.bin", 10_000, seed: 1);
        Assert.Equal(v1, (await GetAsync("/r.bin")).Body);

        byte[] v2 = _files.Create("r.bin.tmp", 10_000, seed: 2);
        File.Move(_files.PathOf("r.bin.tmp"), _files.PathOf("r.bin"), overwrite: true);
        Assert.Equal(v2, (await EventuallyAsync("/r.bin", r => r.Body.SequenceEqual(v2))).Body);

        File.Delete(_files.PathOf("r.bin"));
        Assert.Equal(HttpStatusCode.NotFound, (await EventuallyAsync("/r.bin", r => r.Status == HttpStatusCode.NotFound)).Status);

        byte[] v3 = _files.Create("r.bin", 300, seed: 3);
        var created = await EventuallyAsync("/r.bin", r => r.Status == HttpStatusCode.OK);
        Assert.Equal(v3, created.Body);
    }

    [Fact]
    public async Task New_sidecar_is_picked_up()
    {
        byte[] plain = _files.Create("site.css", 4000, seed: 4);
        using HttpResponseMessage before = await _host.SendAsync(Transport.Http11, "/site.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br"));
        Assert.Empty(before.Content.Headers.ContentEncoding);

        byte[] brotli = _files.Create("site.css.br", 900, seed: 5);
        DateTime deadline = DateTime.UtcNow + Eventually;
        string? encoding = null;
        byte[] body = [];
        while (encoding != "br" && DateTime.UtcNow < deadline)
        {
            using HttpResponseMessage after = await _host.SendAsync(Transport.Http11, "/site.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br"));
            encoding = after.Content.Headers.ContentEncoding.SingleOrDefault();
            body = await after.Content.ReadAsByteArrayAsync();
        }

        Assert.Equal("br", encoding);
        Assert.Equal(brotli, body);
        Assert.NotEqual(plain.Length, body.Length);
    }

    [Fact]
    public async Task Under_load_every_response_is_one_real_version_with_matching_headers()
    {
        const int Size = 3000;
        var versions = new List<byte[]>();
        var known = new ConcurrentDictionary<string, byte>();
        void Remember(byte[] v)
        {
            versions.Add(v);
            known[TestFiles.Sha256(v)] = 0;
        }

        Remember(_files.Create("hot.bin", Size, seed: 100));
        using var cts = new CancellationTokenSource();
        var etagToBody = new ConcurrentDictionary<string, string>();
        var problems = new ConcurrentQueue<string>();
        int served = 0;

        async Task Reader()
        {
            while (!cts.IsCancellationRequested)
            {
                using HttpResponseMessage response = await _host.SendAsync(Transport.Http11, "/hot.bin");
                byte[] body = await response.Content.ReadAsByteArrayAsync();
                if (response.StatusCode != HttpStatusCode.OK)
                {
                    continue; // A 404 while a file is being swapped in by rename cannot happen, but is not a mix either.
                }

                Interlocked.Increment(ref served);
                string sha = TestFiles.Sha256(body);
                if (!known.ContainsKey(sha))
                {
                    problems.Enqueue($"body of {body.Length} bytes is no version");
                }

                if (response.Content.Headers.ContentLength != body.Length)
                {
                    problems.Enqueue($"Content-Length {response.Content.Headers.ContentLength} for {body.Length} bytes");
                }

                string etag = response.Headers.ETag!.Tag;
                string previous = etagToBody.GetOrAdd(etag, sha);
                if (previous != sha)
                {
                    problems.Enqueue($"ETag {etag} named two different bodies");
                }
            }
        }

        Task[] readers = Enumerable.Range(0, 4).Select(_ => Task.Run(Reader)).ToArray();
        for (int i = 1; i <= 40; i++)
        {
            byte[] next = new byte[Size];
            new Random(i).NextBytes(next);
            Remember(next);
            if (i % 2 == 0)
            {
                // Atomic replacement.
                _files.Write("hot.tmp", next);
                File.Move(_files.PathOf("hot.tmp"), _files.PathOf("hot.bin"), overwrite: true);
            }
            else
            {
                // Same-size rewrite in place, in one write call.
                using var stream = new FileStream(_files.PathOf("hot.bin"), FileMode.Open, FileAccess.Write, FileShare.ReadWrite, bufferSize: 0);
                stream.Write(next);
            }

            await Task.Delay(25);
        }

        cts.Cancel();
        await Task.WhenAll(readers);
        Assert.True(served > 40, $"only {served} responses");
        Assert.Empty(problems);

        // And the last version wins.
        byte[] last = versions[^1];
        Assert.Equal(last, (await EventuallyAsync("/hot.bin", r => r.Body.SequenceEqual(last))).Body);
    }
}
