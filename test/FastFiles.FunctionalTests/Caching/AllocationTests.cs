using System.Collections.Concurrent;
using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Caching;

/// <summary>
/// Measures what FastFiles' middleware allocates on the request thread for a cached file, with a browser-like
/// header set, by reading <see cref="GC.GetAllocatedBytesForCurrentThread"/> around it. Only requests that
/// complete synchronously are counted (an await would move the work to another thread).
/// </summary>
public sealed class AllocationTests : IAsyncLifetime
{
    private readonly TestFiles _files = new();
    private readonly ConcurrentQueue<long> _allocations = new();
    private TestHost _host = null!;
    private int _withoutHeaderCache;

    public async Task InitializeAsync()
    {
        _files.Create("a.css", 1024);
        _files.Create("b.js", 4096);
        _files.Write("b.js.br", new byte[700]);
        File.SetLastWriteTimeUtc(_files.PathOf("b.js.br"), DateTime.UtcNow.AddSeconds(5));
        _host = await TestHost.StartAsync(
            app =>
            {
                app.Use((context, next) =>
                {
                    if (context.Features.Get<FastFiles.Http.RequestHeaderCache>() is null)
                    {
                        Interlocked.Increment(ref _withoutHeaderCache);
                    }

                    long before = GC.GetAllocatedBytesForCurrentThread();
                    Task task = next(context);
                    long after = GC.GetAllocatedBytesForCurrentThread();
                    if (task.IsCompletedSuccessfully)
                    {
                        _allocations.Enqueue(after - before);
                    }

                    return task;
                });
                app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), CacheControl = "public, max-age=60" });
            },
            services => services.AddFastFiles(),
            configureEndpoints: l => l.UseRequestHeaderCache());
    }

    public async Task DisposeAsync()
    {
        await _host.DisposeAsync();
        _files.Dispose();
    }

    private static bool IsOptimized(System.Reflection.Assembly assembly)
        => assembly.GetCustomAttributes(typeof(System.Diagnostics.DebuggableAttribute), false)
            is not [System.Diagnostics.DebuggableAttribute { IsJITOptimizerDisabled: true }];

    private static void BrowserHeaders(HttpRequestMessage request, string? etag)
    {
        request.Headers.TryAddWithoutValidation("Accept", "text/css,*/*;q=0.1");
        request.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip, deflate, br, zstd");
        request.Headers.TryAddWithoutValidation("Accept-Language", "en-US,en;q=0.9");
        request.Headers.TryAddWithoutValidation("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36");
        request.Headers.TryAddWithoutValidation("Cookie", "session=abc123; theme=dark");
        request.Headers.TryAddWithoutValidation("Sec-Fetch-Dest", "style");
        request.Headers.TryAddWithoutValidation("Sec-Fetch-Mode", "no-cors");
        request.Headers.TryAddWithoutValidation("Sec-Fetch-Site", "same-origin");
        request.Headers.TryAddWithoutValidation("Sec-CH-UA", "\"Chromium\";v=\"130\"");
        request.Headers.TryAddWithoutValidation("Sec-CH-UA-Mobile", "?0");
        if (etag is not null)
        {
            request.Headers.TryAddWithoutValidation("If-None-Match", etag);
        }
    }

    [Theory]
    [InlineData(Transport.Http11, "/a.css")]
    [InlineData(Transport.Http11, "/b.js")]
    [InlineData(Transport.H2c, "/a.css")]
    [InlineData(Transport.H2Tls, "/b.js")]
    public async Task Steady_state_cached_requests_allocate_nothing_in_FastFiles(Transport transport, string path)
    {
        string? etag = null;
        for (int i = 0; i < 300; i++)
        {
            if (i == 200)
            {
                // Only the last 100 requests count: warm-up fills the cache, JIT tiers and connection state.
                _allocations.Clear();
            }

            bool revalidate = etag is not null && i % 2 == 1;
            using HttpResponseMessage response = await _host.SendAsync(transport, path, r => BrowserHeaders(r, revalidate ? etag : null));
            await response.Content.ReadAsByteArrayAsync();
            Assert.Equal(revalidate ? HttpStatusCode.NotModified : HttpStatusCode.OK, response.StatusCode);
            etag ??= response.Headers.ETag!.Tag;
        }

        AssertSteadyStateAllocatesNothing();
    }

    private void AssertSteadyStateAllocatesNothing()
    {
        // The steady state measured is the one with the connection's request header cache in place.
        Assert.Equal(0, _withoutHeaderCache);
        long[] samples = _allocations.ToArray();
        Assert.True(samples.Length >= 50, $"only {samples.Length} requests completed synchronously");
        Array.Sort(samples);
        long median = samples[samples.Length / 2];
        // Release builds (eng/test.sh, CI) must allocate nothing. A Debug build of FastFiles compiles async methods'
        // state machines as classes, two small objects per request; bound that instead.
        long allowed = IsOptimized(typeof(FastFilesOptions).Assembly) ? 0 : 1024;
        Assert.True(median <= allowed, $"median {median} bytes per request; samples: {string.Join(",", samples.Take(10))} .. {string.Join(",", samples.TakeLast(5))}");
    }

    // A browser reloading a page revalidates each of its files on one connection, each with its own tag and date: a
    // different If-None-Match on every request, which must not allocate either.
    [Theory]
    [InlineData(Transport.Http11, true)]
    [InlineData(Transport.H2c, true)]
    [InlineData(Transport.Http11, false)]
    public async Task Revalidating_several_files_on_one_connection_allocates_nothing_in_FastFiles(Transport transport, bool withTags)
    {
        string[] paths = ["/a.css", "/b.js"];
        var etags = new Dictionary<string, string>();
        var dates = new Dictionary<string, string>();
        foreach (string path in paths)
        {
            using HttpResponseMessage response = await _host.SendAsync(transport, path, r => BrowserHeaders(r, null));
            await response.Content.ReadAsByteArrayAsync();
            etags[path] = response.Headers.ETag!.Tag;
            dates[path] = response.Content.Headers.GetValues("Last-Modified").Single();
        }

        for (int i = 0; i < 300; i++)
        {
            if (i == 200)
            {
                _allocations.Clear();
            }

            string path = paths[i % 2];
            using HttpResponseMessage response = await _host.SendAsync(transport, path, r =>
            {
                BrowserHeaders(r, withTags ? etags[path] : null);
                r.Headers.TryAddWithoutValidation("If-Modified-Since", dates[path]);
            });
            await response.Content.ReadAsByteArrayAsync();
            Assert.Equal(HttpStatusCode.NotModified, response.StatusCode);
        }

        AssertSteadyStateAllocatesNothing();
    }
}
