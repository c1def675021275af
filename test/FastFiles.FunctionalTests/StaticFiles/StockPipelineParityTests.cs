using System.IO.Compression;
using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.OutputCaching;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// <c>UseFastFiles</c> and <c>FastResults</c> inside the pipelines apps build around <c>UseStaticFiles</c> and
/// <c>Results.File</c>: a middleware that captures the body, output caching, status code pages and exception handlers
/// that re-execute into a file, response compression over HTTPS, a Vary set upstream, a policy in OnPrepareResponse keyed
/// by the file's name, and the RFC 8615 <c>/.well-known/</c> directory. Each answer is what stock gives.
/// </summary>
public sealed class StockPipelineParityTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    // Copies the body into memory and sends it once the rest of the pipeline has returned (a logging or rewriting
    // middleware's shape). The bytes must be in the stream by then.
    private static async Task CaptureBody(HttpContext context, RequestDelegate next)
    {
        Stream original = context.Response.Body;
        using var captured = new MemoryStream();
        context.Response.Body = captured;
        try
        {
            await next(context);
        }
        finally
        {
            context.Response.Body = original;
        }

        captured.Position = 0;
        await captured.CopyToAsync(original);
    }

    [Theory]
    [InlineData(Transport.Http11)]
    [InlineData(Transport.H2c)]
    [InlineData(Transport.Http11Tls)]
    public async Task A_body_captured_by_a_middleware_above_is_whole(Transport transport)
    {
        byte[] small = _files.Create("small.txt", 20);
        byte[] mid = _files.Create("mid.bin", 30_000);
        byte[] large = _files.Create("large.bin", 200_000);
        await using TestHost host = await TestHost.StartAsync(app =>
        {
            app.Use(CaptureBody);
            app.MapGet("/result/{name}", (string name) => FastResults.File(_files.Root, name));
            app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true });
        });

        foreach ((string path, byte[] bytes) in new[] { ("/small.txt", small), ("/mid.bin", mid), ("/large.bin", large), ("/result/small.txt", small), ("/result/mid.bin", mid) })
        {
            // Twice: the second answer comes from the cache.
            for (int i = 0; i < 2; i++)
            {
                using HttpResponseMessage response = await host.SendAsync(transport, path);
                Assert.Equal(HttpStatusCode.OK, response.StatusCode);
                Assert.Equal(bytes, await response.Content.ReadAsByteArrayAsync());
            }
        }

        using HttpResponseMessage range = await host.SendAsync(transport, "/large.bin", r => r.Headers.TryAddWithoutValidation("Range", "bytes=100-199"));
        Assert.Equal(HttpStatusCode.PartialContent, range.StatusCode);
        Assert.Equal(large.AsSpan(100, 100).ToArray(), await range.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Output_caching_stores_and_replays_whole_bodies()
    {
        byte[] small = _files.Create("small.txt", 20);
        await using TestHost host = await TestHost.StartAsync(
            app =>
            {
                app.UseOutputCache();
                app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) });
            },
            services => services.AddOutputCache(o => o.AddBasePolicy(b => b.Cache())));

        for (int i = 0; i < 3; i++)
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/small.txt");
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(small, await response.Content.ReadAsByteArrayAsync());
        }
    }

    [Fact]
    public async Task A_status_set_before_the_file_is_kept()
    {
        byte[] page = _files.Create("404.html", 300);
        byte[] file = _files.Create("file.txt", 50);
        await using TestHost host = await TestHost.StartAsync(app =>
        {
            app.UseStatusCodePagesWithReExecute("/404.html");
            app.MapGet("/gone", (HttpContext c) =>
            {
                c.Response.StatusCode = StatusCodes.Status410Gone;
                return FastResults.File(_files.Root, "file.txt");
            });
            app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) });
            app.Use((c, next) =>
            {
                if (c.Request.Path == "/missing")
                {
                    c.Response.StatusCode = StatusCodes.Status404NotFound;
                    return Task.CompletedTask;
                }

                return next(c);
            });
        });

        // Status code pages re-execute into the file: still a 404, with the page (UseStaticFiles only replaces a 200).
        using (HttpResponseMessage missing = await host.SendAsync(Transport.Http11, "/missing"))
        {
            Assert.Equal(HttpStatusCode.NotFound, missing.StatusCode);
            Assert.Equal(page, await missing.Content.ReadAsByteArrayAsync());
        }

        // A file result keeps the app's status for its whole body, as Results.File does, and sets its own for a range.
        using (HttpResponseMessage gone = await host.SendAsync(Transport.Http11, "/gone"))
        {
            Assert.Equal(HttpStatusCode.Gone, gone.StatusCode);
            Assert.Equal(file, await gone.Content.ReadAsByteArrayAsync());
        }

        using (HttpResponseMessage partial = await host.SendAsync(Transport.Http11, "/gone", r => r.Headers.TryAddWithoutValidation("Range", "bytes=0-9")))
        {
            Assert.Equal(HttpStatusCode.PartialContent, partial.StatusCode);
            Assert.Equal(file.AsSpan(0, 10).ToArray(), await partial.Content.ReadAsByteArrayAsync());
        }

        // Unaffected: the file itself.
        using HttpResponseMessage ok = await host.SendAsync(Transport.Http11, "/file.txt");
        Assert.Equal(HttpStatusCode.OK, ok.StatusCode);
    }

    [Fact]
    public async Task An_exception_handler_page_keeps_its_500()
    {
        byte[] error = _files.Create("error.html", 200);
        await using TestHost host = await TestHost.StartAsync(app =>
        {
            app.UseExceptionHandler("/error.html");
            app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) });
            app.Run(_ => throw new InvalidOperationException("expected by the test"));
        });

        using HttpResponseMessage thrown = await host.SendAsync(Transport.Http11, "/throw");
        Assert.Equal(HttpStatusCode.InternalServerError, thrown.StatusCode);
        Assert.Equal(error, await thrown.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task OnPrepareResponse_is_given_the_requested_file_when_a_sidecar_is_sent()
    {
        byte[] html = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("<p>hello</p>\n", 200)));
        _files.Write("index.html", html);
        using (var gz = new MemoryStream())
        {
            using (var z = new GZipStream(gz, CompressionLevel.Fastest, leaveOpen: true))
            {
                z.Write(html);
            }

            _files.Write("index.html.gz", gz.ToArray());
        }

        var names = new List<string>();
        await using TestHost host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(_files.Root),
            OnPrepareResponse = c =>
            {
                lock (names)
                {
                    names.Add($"{c.File.Name} {c.ContentEncoding} {Path.GetFileName(c.PhysicalPath)}");
                }

                c.Context.Response.Headers.CacheControl = c.File.Name.EndsWith(".html", StringComparison.Ordinal) ? "no-cache" : "max-age=600";
            },
        }));

        using HttpResponseMessage gzip = await host.SendAsync(Transport.Http11, "/index.html", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip"));
        using HttpResponseMessage identity = await host.SendAsync(Transport.Http11, "/index.html");
        Assert.Equal("gzip", gzip.Content.Headers.ContentEncoding.Single());
        Assert.Equal("no-cache", gzip.Header("Cache-Control"));
        Assert.Equal("no-cache", identity.Header("Cache-Control"));
        Assert.Equal(["index.html gzip index.html.gz", "index.html  index.html"], names);
    }

    // As StaticFileOptions.OnPrepareResponseAsync: awaited after OnPrepareResponse, before the body, for every response.
    [Theory]
    [InlineData(Transport.Http11)]
    [InlineData(Transport.H2c)]
    public async Task OnPrepareResponseAsync_is_awaited_after_OnPrepareResponse(Transport transport)
    {
        byte[] bytes = _files.Create("a.txt", 3_000);
        await using TestHost host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(_files.Root),
            OnPrepareResponse = c => c.Context.Response.Headers["X-Order"] = "sync",
            OnPrepareResponseAsync = async c =>
            {
                await Task.Yield();
                c.Context.Response.Headers["X-Order"] = c.Context.Response.Headers["X-Order"] + ",async";
                c.Context.Response.Headers.CacheControl = "no-store";
            },
        }));

        using HttpResponseMessage full = await host.SendAsync(transport, "/a.txt");
        Assert.Equal("sync,async", full.Header("X-Order"));
        Assert.Equal("no-store", full.Header("Cache-Control"));
        Assert.Equal(bytes, await full.Content.ReadAsByteArrayAsync());

        using HttpResponseMessage range = await host.SendAsync(transport, "/a.txt", r => r.Headers.TryAddWithoutValidation("Range", "bytes=10-19"));
        Assert.Equal(HttpStatusCode.PartialContent, range.StatusCode);
        Assert.Equal("sync,async", range.Header("X-Order"));
        Assert.Equal(bytes.AsSpan(10, 10).ToArray(), await range.Content.ReadAsByteArrayAsync());

        // A lane root never runs application code: it refuses the callback at start.
        await Assert.ThrowsAnyAsync<Exception>(() => TestHost.StartAsync(
            app => { },
            configureEndpoints: l => l.UseStaticLane(o => o.Roots.Add(new StaticLaneRootOptions
            {
                PhysicalPath = _files.Root,
                Files = new FastStaticFileOptions { OnPrepareResponseAsync = _ => Task.CompletedTask },
            }))));
    }

    // A field whose name merely contains "Accept-Encoding" is another field: the response still names Accept-Encoding.
    [Theory]
    [InlineData("Cookie")]
    [InlineData("X-Accept-Encoding-Hint")]
    public async Task A_Vary_set_upstream_is_kept_beside_Accept_Encoding(string upstream)
    {
        _files.Create("app.js", 2_000);
        _files.Create("app.js.br", 500);
        await using TestHost host = await TestHost.StartAsync(app =>
        {
            app.Use((c, next) =>
            {
                c.Response.Headers.Vary = upstream;
                return next(c);
            });
            app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) });
        });

        foreach (string encoding in new[] { "br", "identity" })
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/app.js", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", encoding));
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            string[] vary = [.. response.Headers.Vary];
            Assert.Contains(upstream, vary);
            Assert.Contains("Accept-Encoding", vary);
        }
    }

    [Theory]
    [InlineData(null, "gzip")]
    [InlineData(HttpsCompressionMode.DoNotCompress, null)]
    public async Task Response_compression_over_HTTPS_follows_HttpsCompression(HttpsCompressionMode? mode, string? expected)
    {
        byte[] css = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("body { margin: 0; }\n", 200)));
        _files.Write("site.css", css);
        var options = new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) };
        if (mode is { } set)
        {
            options.HttpsCompression = set;
        }

        // EnableForHttps stays off, as by default: only the static file middleware's say-so compresses over HTTPS.
        await using TestHost host = await TestHost.StartAsync(
            app =>
            {
                app.UseResponseCompression();
                app.UseFastFiles(options);
            },
            services => services.AddResponseCompression());

        using HttpResponseMessage response = await host.SendAsync(Transport.Http11Tls, "/site.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip"));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(expected, response.Content.Headers.ContentEncoding.SingleOrDefault());
        byte[] body = await response.Content.ReadAsByteArrayAsync();
        if (expected is not null)
        {
            using var unzip = new GZipStream(new MemoryStream(body), CompressionMode.Decompress);
            using var plain = new MemoryStream();
            await unzip.CopyToAsync(plain);
            body = plain.ToArray();
        }

        Assert.Equal(css, body);
    }

    [Fact]
    public async Task The_well_known_directory_is_served_and_other_dot_segments_are_not()
    {
        byte[] token = _files.Create(".well-known/acme-challenge/Zx9token", 87);
        byte[] security = _files.Create(".well-known/security.txt", 120);
        _files.Create(".well-known/.secret", 10);
        _files.Create(".git/config", 10);
        _files.Create("dir/.well-known/x.txt", 10);
        _files.Create(".env", 10);
        await using TestHost host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(_files.Root),
            ServeUnknownFileTypes = true,
        }));

        using (HttpResponseMessage challenge = await host.SendAsync(Transport.Http11, "/.well-known/acme-challenge/Zx9token"))
        {
            Assert.Equal(HttpStatusCode.OK, challenge.StatusCode);
            Assert.Equal(token, await challenge.Content.ReadAsByteArrayAsync());
        }

        using (HttpResponseMessage txt = await host.SendAsync(Transport.H2c, "/.well-known/security.txt"))
        {
            Assert.Equal(HttpStatusCode.OK, txt.StatusCode);
            Assert.Equal(security, await txt.Content.ReadAsByteArrayAsync());
        }

        foreach (string refused in new[] { "/.well-known/.secret", "/.git/config", "/.env", "/.well-known" })
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, refused);
            Assert.True(response.StatusCode == HttpStatusCode.NotFound, $"{refused}: {(int)response.StatusCode}");
        }

        // Below the root's top the name is served as well (a site mounted under a prefix keeps its own /.well-known/).
        using HttpResponseMessage nested = await host.SendAsync(Transport.Http11, "/dir/.well-known/x.txt");
        Assert.Equal(HttpStatusCode.OK, nested.StatusCode);
    }
}
