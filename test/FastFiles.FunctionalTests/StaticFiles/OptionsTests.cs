using System.Collections.Concurrent;
using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>Cache-Control and fingerprints, OnPrepareResponse, and default files.</summary>
public sealed class OptionsTests(OptionsTests.Fixture fixture) : IClassFixture<OptionsTests.Fixture>
{
    private const string CacheControl = "public, max-age=60";
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public ConcurrentQueue<(string Path, int Status, string? Encoding, string? PhysicalPath)> Prepared { get; } = new();

        protected override async Task<TestHost> StartHostAsync()
        {
            foreach (string name in new[] { "plain.txt", "app.3f2a9c1b.js", "app-3F2A9C1B0011.css", "app.3f2a9c1.js", "app.3f2a9c1z.js", "hashed.0123456789abcdef.txt" })
            {
                Files.Write(name, Encoding.ASCII.GetBytes(name));
            }

            Files.Write("site/index.html", Encoding.ASCII.GetBytes("root index"));
            Files.Write("site/dir/index.html", Encoding.ASCII.GetBytes("dir index"));
            Files.Write("site/dir/page.html", Encoding.ASCII.GetBytes("page"));
            Files.Write("site/nodefault/other.html", Encoding.ASCII.GetBytes("other"));
            Files.Write("site/index.html.gz", Encoding.ASCII.GetBytes("gz index"));

            return await TestHost.StartAsync(app =>
            {
                app.UseFastFiles(new FastStaticFileOptions
                {
                    RequestPath = "/site",
                    FileProvider = new PhysicalFileProvider(Files.PathOf("site")),
                    DefaultFileNames = ["index.html"],
                });
                app.UseFastFiles(new FastStaticFileOptions
                {
                    RequestPath = "/noredirect",
                    FileProvider = new PhysicalFileProvider(Files.PathOf("site")),
                    DefaultFileNames = ["index.html"],
                    RedirectToAppendTrailingSlash = false,
                });
                app.UseFastFiles(new FastStaticFileOptions
                {
                    RequestPath = "/nodefaults",
                    FileProvider = new PhysicalFileProvider(Files.PathOf("site")),
                });
                app.UseFastFiles(new FastStaticFileOptions
                {
                    RequestPath = "/nofingerprint",
                    FileProvider = new PhysicalFileProvider(Files.Root),
                    CacheControl = CacheControl,
                    FingerprintPattern = null,
                });
                app.UseFastFiles(new FastStaticFileOptions
                {
                    FileProvider = new PhysicalFileProvider(Files.Root),
                    CacheControl = CacheControl,
                    OnPrepareResponse = ctx =>
                    {
                        Prepared.Enqueue((ctx.Context.Request.Path, ctx.Context.Response.StatusCode, ctx.ContentEncoding, ctx.PhysicalPath));
                        ctx.Context.Response.Headers["X-Prepared"] = ctx.File.Name;
                    },
                });
                // Marks requests that fell through every UseFastFiles.
                app.Run(context =>
                {
                    context.Response.StatusCode = StatusCodes.Status404NotFound;
                    context.Response.Headers["X-Fell-Through"] = "1";
                    return Task.CompletedTask;
                });
            });
        }
    }

    [Theory]
    [InlineData("/plain.txt", CacheControl)]
    [InlineData("/app.3f2a9c1b.js", FastStaticFileOptions.ImmutableCacheControl)]
    [InlineData("/app-3F2A9C1B0011.css", FastStaticFileOptions.ImmutableCacheControl)]
    [InlineData("/hashed.0123456789abcdef.txt", FastStaticFileOptions.ImmutableCacheControl)]
    [InlineData("/app.3f2a9c1.js", CacheControl)]
    [InlineData("/app.3f2a9c1z.js", CacheControl)]
    [InlineData("/nofingerprint/app.3f2a9c1b.js", CacheControl)]
    public async Task Cache_control_from_the_option_or_the_fingerprint(string path, string expected)
    {
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage response = await _f.Host.SendAsync(transport, path);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(expected, response.Header("Cache-Control"));

            // RFC 9110 15.4.5: a 304 carries the Cache-Control a 200 would have.
            using HttpResponseMessage notModified = await _f.Host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("If-None-Match", response.Header("ETag")));
            Assert.Equal(HttpStatusCode.NotModified, notModified.StatusCode);
            Assert.Equal(expected, notModified.Header("Cache-Control"));
        }
    }

    [Fact]
    public async Task No_cache_control_by_default()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/site/dir/page.html");
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Null(response.Header("Cache-Control"));
    }

    [Fact]
    public async Task On_prepare_response_runs_for_every_generated_response_and_can_add_headers()
    {
        string etag;
        using (HttpResponseMessage ok = await _f.Host.SendAsync(Transport.Http11, "/plain.txt?p=1"))
        {
            Assert.Equal("plain.txt", ok.Header("X-Prepared"));
            Assert.Equal("plain.txt", await ok.Content.ReadAsStringAsync());
            etag = ok.Header("ETag")!;
        }

        (string, Action<HttpRequestMessage>?, HttpMethod?, int)[] cases =
        [
            ("/plain.txt", r => r.Headers.TryAddWithoutValidation("Range", "bytes=0-1"), null, 206),
            ("/plain.txt", r => r.Headers.TryAddWithoutValidation("Range", "bytes=500-"), null, 416),
            ("/plain.txt", r => r.Headers.TryAddWithoutValidation("If-None-Match", etag), null, 304),
            ("/plain.txt", r => r.Headers.TryAddWithoutValidation("If-Match", "\"x\""), null, 412),
            ("/plain.txt", null, HttpMethod.Head, 200),
        ];
        foreach ((string path, Action<HttpRequestMessage>? configure, HttpMethod? method, int status) in cases)
        {
            using HttpResponseMessage response = await _f.Host.SendAsync(Transport.H2c, path, configure, method);
            Assert.Equal(status, (int)response.StatusCode);
            Assert.Equal("plain.txt", response.Header("X-Prepared"));
        }

        // It sees the status already decided and the physical file.
        Assert.Contains(_f.Prepared, p => p.Status == 416 && p.PhysicalPath == _f.Files.PathOf("plain.txt"));
        Assert.Contains(_f.Prepared, p => p.Status == 206);
    }

    [Fact]
    public async Task On_prepare_response_is_not_called_for_requests_passed_on()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/missing.txt");
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        Assert.Equal("1", response.Header("X-Fell-Through"));
        Assert.Null(response.Header("X-Prepared"));
    }

    [Theory]
    [InlineData(Transport.Http11, "/site/", "root index")]
    [InlineData(Transport.Http11, "/site/dir/", "dir index")]
    [InlineData(Transport.Http11, "/site/dir/index.html", "dir index")]
    [InlineData(Transport.Http11, "/site/dir/page.html", "page")]
    [InlineData(Transport.H2c, "/site/", "root index")]
    [InlineData(Transport.H2c, "/site/dir/", "dir index")]
    [InlineData(Transport.Http11, "/noredirect/dir/", "dir index")]
    public async Task Default_file_is_served_for_a_directory(Transport transport, string path, string content)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, path);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("text/html", response.Content.Headers.ContentType?.MediaType);
        Assert.Equal(content, await response.Content.ReadAsStringAsync());
        Assert.NotNull(response.Header("ETag"));
    }

    [Fact]
    public async Task Default_file_gets_ranges_conditionals_and_sidecars()
    {
        using HttpResponseMessage range = await _f.Host.SendAsync(Transport.Http11, "/site/dir/", r => r.Headers.TryAddWithoutValidation("Range", "bytes=0-2"));
        Assert.Equal(HttpStatusCode.PartialContent, range.StatusCode);
        Assert.Equal("dir", await range.Content.ReadAsStringAsync());

        using HttpResponseMessage gz = await _f.Host.SendAsync(Transport.Http11, "/site/", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip"));
        Assert.Equal("gzip", gz.Header("Content-Encoding"));
        Assert.Equal("gz index", await gz.Content.ReadAsStringAsync());

        using HttpResponseMessage head = await _f.Host.SendAsync(Transport.Http11, "/site/", method: HttpMethod.Head);
        Assert.Equal(HttpStatusCode.OK, head.StatusCode);
        Assert.Equal("root index".Length, head.Content.Headers.ContentLength);
    }

    // As UseDefaultFiles with RedirectToAppendTrailingSlash off: the default file answers at the URL without the slash
    // (it was a 404).
    [Theory]
    [InlineData("/noredirect/dir", "dir index")]
    [InlineData("/noredirect/dir?x=1", "dir index")]
    [InlineData("/noredirect", "root index")]
    public async Task Without_the_redirect_a_directory_without_its_slash_answers_with_its_default_file(string path, string body)
    {
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage response = await _f.Host.SendAsync(transport, path);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(body, await response.Content.ReadAsStringAsync());
            Assert.Equal("text/html", response.Content.Headers.ContentType?.MediaType);
        }
    }

    // Under a path base (app.Map), the branch's root is an empty path: it needs the slash as "/site" does (its index was
    // served at "/docs", where its relative links resolve against "/").
    [Fact]
    public async Task The_root_of_a_mapped_branch_without_its_slash_redirects()
    {
        await using TestHost host = await TestHost.StartAsync(app => app.Map("/docs", docs => docs.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(_f.Files.PathOf("site")),
            DefaultFileNames = ["index.html"],
        })));
        foreach ((string path, string location) in new[] { ("/docs", "/docs/"), ("/docs?x=1", "/docs/?x=1") })
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, path);
            Assert.Equal(HttpStatusCode.MovedPermanently, response.StatusCode);
            Assert.Equal(location, response.Header("Location"));
        }

        using HttpResponseMessage index = await host.SendAsync(Transport.Http11, "/docs/");
        Assert.Equal("root index", await index.Content.ReadAsStringAsync());
    }

    [Theory]
    [InlineData("/site/dir", "/site/dir/")]
    [InlineData("/site/dir?x=1&y=2", "/site/dir/?x=1&y=2")]
    // The RequestPath itself names the root directory: relative links in its index need the slash too (as UseDefaultFiles does).
    [InlineData("/site", "/site/")]
    public async Task Directory_without_trailing_slash_redirects(string path, string location)
    {
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage response = await _f.Host.SendAsync(transport, path);
            Assert.Equal(HttpStatusCode.MovedPermanently, response.StatusCode);
            Assert.Equal(location, response.Header("Location"));
            Assert.Empty(await response.Content.ReadAsByteArrayAsync());
        }
    }

    [Theory]
    [InlineData("/site/nodefault/")]
    [InlineData("/site/nodefault")]
    [InlineData("/nodefaults/")]
    [InlineData("/nodefaults/dir/")]
    [InlineData("/nodefaults/dir")]
    public async Task Directories_without_a_default_file_fall_through(string path)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, path);
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        Assert.Equal("1", response.Header("X-Fell-Through"));
    }

    [Fact]
    public async Task Post_to_a_directory_falls_through()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/site/dir/", method: HttpMethod.Post);
        Assert.Equal("1", response.Header("X-Fell-Through"));
    }
}
