using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.FunctionalTests.StaticFiles;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>Edge cases of validators, sidecars and redirects: variant tags that name their bytes, the trailing-slash redirect of an escaped name, a stale sidecar beside a fresh one, a future-dated file written now.</summary>
public sealed class ValidatorAndRedirectEdgeTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    /// <summary>
    /// RFC 9110 8.8.3: a strong ETag changes whenever the representation data changes. A dynamically compressed variant's
    /// tag is "&lt;mtime&gt;-&lt;encoded length&gt;-br", so two servers (a farm mid-rollout, or one server before and after a
    /// restart) whose brotli quality differs send the same strong tag for different bytes whenever the lengths agree:
    /// an If-Range resume taken from one completes with the other's bytes.
    /// </summary>
    [Fact]
    public async Task A_dynamic_variant_tag_differs_when_its_bytes_differ()
    {
        // Brotli quality 1 and 2 encode this file to 46 bytes each, different bytes (window 22, as CompressionPolicy).
        _files.Write("same.js", Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("var x = 1;\n", 300))));
        await using TestHost one = await StartAsync(quality: 1);
        await using TestHost two = await StartAsync(quality: 2);

        using HttpResponseMessage a = await Compression.WaitForEncodingAsync(one, Transport.Http11, "/same.js", "br");
        using HttpResponseMessage b = await Compression.WaitForEncodingAsync(two, Transport.Http11, "/same.js", "br");
        byte[] bytesA = await a.Content.ReadAsByteArrayAsync();
        byte[] bytesB = await b.Content.ReadAsByteArrayAsync();
        Assert.Equal(bytesA.Length, bytesB.Length);
        Assert.False(bytesA.AsSpan().SequenceEqual(bytesB), "the two qualities were expected to give different bytes");

        // The consequence: a range resumed with the first server's tag is answered 206 by the second, with its bytes.
        using HttpResponseMessage resumed = await two.SendAsync(Transport.Http11, "/same.js", r =>
        {
            r.Headers.TryAddWithoutValidation("Accept-Encoding", "br");
            r.Headers.TryAddWithoutValidation("Range", "bytes=20-");
            r.Headers.TryAddWithoutValidation("If-Range", a.Header("ETag")!);
        });
        byte[] tail = await resumed.Content.ReadAsByteArrayAsync();
        bool mixed = resumed.StatusCode == HttpStatusCode.PartialContent && !bytesA.AsSpan(20).SequenceEqual(tail);

        Assert.NotEqual(a.Header("ETag"), b.Header("ETag"));
        Assert.False(mixed, "a 206 from another encoding was accepted under the first server's strong tag");
    }

    /// <summary>
    /// The trailing-slash redirect (RFC 9110 15.4.2) must name the directory it was asked for. Its Location is made with
    /// PathString's escaping, which keeps a decoded "%3F" as it is: a directory named "q%3Fx" (requested as
    /// /q%253Fx) is sent to /q%3Fx/, which names "q?x" and is a 404. (FastFilesFingerprinter.Redirect escapes each
    /// segment in full for this reason.)
    /// </summary>
    [Fact]
    public async Task The_trailing_slash_redirect_leads_to_the_directory()
    {
        _files.Write("q%3Fx/index.html", Encoding.ASCII.GetBytes("<p>index</p>"));
        _files.Write("100%/index.html", Encoding.ASCII.GetBytes("<p>percent</p>"));
        await using TestHost host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(_files.Root),
            DefaultFileNames = ["index.html"],
        }));

        foreach (string target in new[] { "/q%253Fx", "/100%25" })
        {
            // The slashed form is served.
            RawResponse direct = await RawHttp.SendAsync(host.Http, target + "/");
            Assert.Equal(200, direct.Status);

            RawResponse redirect = await RawHttp.SendAsync(host.Http, target);
            Assert.Equal(301, redirect.Status);
            string location = redirect.Headers["Location"];
            RawResponse followed = await RawHttp.SendAsync(host.Http, location);
            Assert.True(followed.Status == 200, $"{target} redirected to {location}, which is a {followed.Status}");
        }
    }

    /// <summary>
    /// Without the file cache, a stale sidecar of the coding the client prefers hides a fresh one it also accepts: the
    /// identity is sent where the cached path (and UseFastFiles with the cache) sends the fresh gzip sidecar.
    /// </summary>
    [Fact]
    public async Task A_stale_sidecar_does_not_hide_a_fresh_one_without_the_cache()
    {
        byte[] css = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("body { color: red; }\n", 200)));
        _files.Write("site.css", css);
        _files.Write("site.css.br", [1, 2, 3]);
        _files.Write("site.css.gz", Compression.Gzip(css));
        DateTime modified = File.GetLastWriteTimeUtc(_files.PathOf("site.css"));
        File.SetLastWriteTimeUtc(_files.PathOf("site.css.br"), modified.AddSeconds(-10));
        File.SetLastWriteTimeUtc(_files.PathOf("site.css.gz"), modified.AddSeconds(1));

        foreach (bool cache in new[] { true, false })
        {
            await using TestHost host = await TestHost.StartAsync(
                app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) }),
                services => services.AddFastFiles(o => o.EnableFileCache = cache));
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/site.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br, gzip"));
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.True(response.Header("Content-Encoding") == "gzip", $"file cache {(cache ? "on" : "off")}: Content-Encoding {response.Header("Content-Encoding") ?? "(none)"}");
            Assert.Equal(css, Compression.Decode("gzip", await response.Content.ReadAsByteArrayAsync()));
        }
    }

    /// <summary>
    /// RFC 9110 13.1.3: 304 only when the representation has not been modified since the date. A file whose modification
    /// time is in the future (a deploy from a machine whose clock is ahead) and whose change time is under a second old
    /// when first opened (any busy site right after the deploy) gets, as Last-Modified, a time fixed for the process (a
    /// second before its first file version), which can be hours before the file was written, and before the dates of
    /// earlier versions: If-Modified-Since from a client holding such an earlier copy is then a 304 with stale bytes.
    /// </summary>
    [Fact]
    public async Task A_future_dated_file_written_now_is_not_reported_unmodified_since_before_it_was_written()
    {
        // An earlier deploy from the same machine: also dated ahead, served at once. The process's fixed time is set by
        // now (FileVersion.s_firstVersionTicks is initialized on the first future date the process meets).
        await using TestHost host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) }));
        _files.Write("earlier.txt", Encoding.ASCII.GetBytes("version 1"));
        File.SetLastWriteTimeUtc(_files.PathOf("earlier.txt"), DateTime.UtcNow.AddHours(1));
        using (HttpResponseMessage earlier = await host.SendAsync(Transport.Http11, "/earlier.txt"))
        {
            Assert.Equal(HttpStatusCode.OK, earlier.StatusCode);
        }

        // The process has been serving for a while when the new version arrives (setup, not a timing assertion).
        await Task.Delay(5000);

        // A client's copy, current three seconds ago; then the deploy writes the file, dated an hour ahead.
        string clientDate = DateTimeOffset.UtcNow.AddSeconds(-3).ToString("r", System.Globalization.CultureInfo.InvariantCulture);
        _files.Write("deployed.txt", Encoding.ASCII.GetBytes("version 2"));
        File.SetLastWriteTimeUtc(_files.PathOf("deployed.txt"), DateTime.UtcNow.AddHours(1));

        using HttpResponseMessage revalidated = await host.SendAsync(Transport.Http11, "/deployed.txt", m => m.Headers.TryAddWithoutValidation("If-Modified-Since", clientDate));
        Assert.True(
            revalidated.StatusCode == HttpStatusCode.OK,
            $"written after {clientDate} (and dated an hour ahead), yet {(int)revalidated.StatusCode} with Last-Modified {revalidated.Header("Last-Modified")}");

        // And what is sent is still never later than Date (RFC 9110 8.8.2.1).
        Assert.True(revalidated.Content.Headers.LastModified <= revalidated.Headers.Date, $"Last-Modified {revalidated.Header("Last-Modified")} after Date {revalidated.Header("Date")}");
    }

    private Task<TestHost> StartAsync(int quality)
        => TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), EnableDynamicCompression = true }),
            services => services.AddFastFiles(o => o.BrotliCompressionQuality = quality));
}
