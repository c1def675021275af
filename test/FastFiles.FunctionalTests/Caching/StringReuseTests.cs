using System.Collections.Concurrent;
using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Options;

namespace FastFiles.FunctionalTests.Caching;

/// <summary><c>DisableStringReuse</c> (FastFiles' own, or Kestrel's) must change no response.</summary>
public sealed class StringReuseTests : IDisposable
{
    private readonly TestFiles _files = new();

    public StringReuseTests()
    {
        _files.Create("a.css", 5000);
        _files.Create("b.js", 1200);
        _files.Write("b.js.gz", new byte[300]);
        // In the future for the whole test: a sidecar dated in the future gets a Last-Modified from its change time, and
        // one that comes of age between the three hosts (3 s ahead did, on a loaded machine) would differ between them.
        File.SetLastWriteTimeUtc(_files.PathOf("b.js.gz"), DateTime.UtcNow.AddHours(1));
    }

    public void Dispose() => _files.Dispose();

    // Requests that reached the app without the connection's request header cache: none may.
    private int _withoutHeaderCache;

    private Task<TestHost> StartAsync(bool? fastFilesDisable, bool kestrelDisable) => TestHost.StartAsync(
        app =>
        {
            app.Use((context, next) =>
            {
                if (context.Features.Get<FastFiles.Http.RequestHeaderCache>() is null)
                {
                    Interlocked.Increment(ref _withoutHeaderCache);
                }

                return next(context);
            });
            app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), CacheControl = "public, max-age=5" });
        },
        services => services.AddFastFiles(o => o.DisableStringReuse = fastFilesDisable),
        kestrel => kestrel.DisableStringReuse = kestrelDisable,
        configureEndpoints: l => l.UseRequestHeaderCache());

    private static async Task<string> TranscriptAsync(TestHost host, Transport transport)
    {
        var lines = new List<string>();
        string? etag = null;
        (string Path, string? Range, string? AcceptEncoding, bool Conditional)[] requests =
        [
            ("/a.css", null, null, false),
            ("/a.css", "bytes=10-99", null, false),
            ("/a.css", "bytes=9999-", null, false),
            ("/a.css", null, null, true),
            ("/b.js", null, "gzip, br", false),
            ("/b.js", null, "identity", false),
            ("/b.js", "bytes=-10", "gzip", false),
            ("/missing.css", null, null, false),
        ];
        foreach ((string path, string? range, string? acceptEncoding, bool conditional) in requests)
        {
            for (int repeat = 0; repeat < 3; repeat++)
            {
                using HttpResponseMessage response = await host.SendAsync(transport, path, r =>
                {
                    if (range is not null)
                    {
                        r.Headers.TryAddWithoutValidation("Range", range);
                    }

                    if (acceptEncoding is not null)
                    {
                        r.Headers.TryAddWithoutValidation("Accept-Encoding", acceptEncoding);
                    }

                    if (conditional && etag is not null)
                    {
                        r.Headers.TryAddWithoutValidation("If-None-Match", etag);
                        r.Headers.TryAddWithoutValidation("If-Modified-Since", "Sat, 01 Jan 2000 00:00:00 GMT");
                    }
                });
                byte[] body = await response.Content.ReadAsByteArrayAsync();
                etag ??= response.Headers.ETag?.Tag;
                IEnumerable<string> headers = response.Headers.Concat(response.Content.Headers)
                    .Where(h => h.Key != "Date")
                    .OrderBy(h => h.Key, StringComparer.Ordinal)
                    .Select(h => $"{h.Key}: {string.Join(",", h.Value)}");
                lines.Add($"{path} {range} {acceptEncoding} {conditional} -> {(int)response.StatusCode} {string.Join(" | ", headers)} sha={TestFiles.Sha256(body)}");
            }
        }

        return string.Join("\n", lines);
    }

    [Theory]
    [InlineData(Transport.Http11)]
    [InlineData(Transport.H2c)]
    [InlineData(Transport.H2Tls)]
    public async Task Reuse_on_and_off_give_identical_responses(Transport transport)
    {
        string reuse, fastFilesOff, kestrelOff;
        await using (TestHost host = await StartAsync(null, kestrelDisable: false))
        {
            reuse = await TranscriptAsync(host, transport);
        }

        await using (TestHost host = await StartAsync(true, kestrelDisable: false))
        {
            fastFilesOff = await TranscriptAsync(host, transport);
        }

        await using (TestHost host = await StartAsync(null, kestrelDisable: true))
        {
            kestrelOff = await TranscriptAsync(host, transport);
        }

        Assert.Contains("-> 206", reuse);
        Assert.Contains("-> 304", reuse);
        Assert.Contains("Content-Encoding: gzip", reuse);
        Assert.Equal(reuse, fastFilesOff);
        Assert.Equal(reuse, kestrelOff);
        Assert.Equal(0, _withoutHeaderCache);
    }

    // FastFiles binds its own setting from the FastFiles section (Kestrel binds no DisableStringReuse from the Kestrel
    // section): given there, it decides whether the connection's request header cache is consulted.
    [Theory]
    [InlineData("--FastFiles:DisableStringReuse=false", false, true)]
    [InlineData("--FastFiles:DisableStringReuse=true", false, false)]
    public async Task DisableStringReuse_from_configuration_is_followed(string setting, bool kestrelDisables, bool expectUsed)
    {
        var memos = new ConcurrentBag<RequestHeaderCache>();
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder(setting);
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l =>
        {
            l.UseRequestHeaderCache();
            l.Use(next => connection =>
            {
                memos.Add(connection.Features.Get<RequestHeaderCache>()!);
                return next(connection);
            });
        }));
        await using WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) });
        Uri[] addresses = await CodeEndpoints.StartAsync(app);

        using var client = new HttpClient();
        using var request = new HttpRequestMessage(HttpMethod.Get, new Uri(addresses[0], "/a.css"));
        request.Headers.TryAddWithoutValidation("If-Modified-Since", "Sat, 01 Jan 2000 00:00:00 GMT");
        using HttpResponseMessage response = await client.SendAsync(request);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);

        Assert.Equal(kestrelDisables, app.Services.GetRequiredService<IOptions<KestrelServerOptions>>().Value.DisableStringReuse);
        Assert.NotEmpty(memos);
        Assert.Equal(expectUsed, memos.Any(m => !m.IsEmpty));
    }
}
