using System.Buffers.Text;
using System.Net;
using System.Security.Cryptography;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// <see cref="IFastFilesFingerprinter"/>: run-time files get URLs with their content hash, served as immutable only
/// while the hash is current; a stale hash is redirected to the current URL.
/// </summary>
public sealed class FingerprinterTests : IAsyncLifetime
{
    private static readonly TimeSpan Eventually = TimeSpan.FromSeconds(10);
    private readonly TestFiles _files = new();
    private TestHost _host = null!;

    public async Task InitializeAsync()
    {
        Directory.CreateDirectory(_files.PathOf("reports"));
        _host = await TestHost.StartAsync(
            app =>
            {
                app.UseFastFiles(new FastStaticFileOptions
                {
                    RequestPath = "/reports",
                    FileProvider = new PhysicalFileProvider(_files.PathOf("reports")),
                    EnableContentHashETags = true,
                    CacheControl = "no-cache",
                });
                // A minimal API rendering a link, as a page or tag helper would.
                app.MapGet("/link", async (string file, IFastFilesFingerprinter fingerprints) => await fingerprints.GetUrlAsync("/reports/" + file));
            },
            services => services.AddFastFiles());
    }

    public async Task DisposeAsync()
    {
        await _host.DisposeAsync();
        await ResponseHeaders.AssertNoOpenFilesUnderAsync(_files.Root);
        _files.Dispose();
    }

    private static string Hash(byte[] bytes) => Base64Url.EncodeToString(SHA256.HashData(bytes).AsSpan(0, 16));

    private IFastFilesFingerprinter Fingerprinter => _host.Services.GetRequiredService<IFastFilesFingerprinter>();

    [Theory]
    [Transports]
    public async Task A_file_created_at_run_time_gets_a_hashed_url_served_as_immutable(Transport transport)
    {
        // Created after the app started: no build step knows it.
        byte[] report = _files.Create($"reports/r-{transport}.css", 3000);
        using HttpResponseMessage link = await _host.SendAsync(transport, $"/link?file=r-{transport}.css");
        string url = await link.Content.ReadAsStringAsync();
        Assert.Equal($"/reports/r-{transport}.css?v={Hash(report)}", url);
        Assert.Equal(url, Fingerprinter.GetUrl($"/reports/r-{transport}.css"));

        using HttpResponseMessage response = await _host.SendAsync(transport, url);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(report, await response.Content.ReadAsByteArrayAsync());
        Assert.Equal(FastStaticFileOptions.ImmutableCacheControl, response.Header("Cache-Control"));

        // The plain URL keeps the root's own Cache-Control.
        using HttpResponseMessage plain = await _host.SendAsync(transport, $"/reports/r-{transport}.css");
        Assert.Equal("no-cache", plain.Header("Cache-Control"));
    }

    [Fact]
    public async Task A_stale_hash_is_redirected_to_the_current_url_and_never_served_as_immutable()
    {
        byte[] v1 = _files.Create("reports/daily.css", 2000, seed: 1);
        string oldUrl = await Fingerprinter.GetUrlAsync("/reports/daily.css");
        Assert.EndsWith(Hash(v1), oldUrl, StringComparison.Ordinal);

        byte[] v2 = _files.Create("reports/daily.css.tmp", 2000, seed: 2);
        File.Move(_files.PathOf("reports/daily.css.tmp"), _files.PathOf("reports/daily.css"), overwrite: true);
        string newUrl = $"/reports/daily.css?v={Hash(v2)}";
        DateTime deadline = DateTime.UtcNow + Eventually;
        while (await Fingerprinter.GetUrlAsync("/reports/daily.css") != newUrl && DateTime.UtcNow < deadline)
        {
            await Task.Delay(20);
        }

        Assert.Equal(newUrl, await Fingerprinter.GetUrlAsync("/reports/daily.css"));
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage stale = await _host.SendAsync(transport, oldUrl);
            Assert.Equal(HttpStatusCode.Found, stale.StatusCode);
            Assert.Equal(newUrl, stale.Headers.Location?.OriginalString);
            Assert.Equal("no-cache", stale.Header("Cache-Control"));

            using HttpResponseMessage current = await _host.SendAsync(transport, newUrl);
            Assert.Equal(v2, await current.Content.ReadAsByteArrayAsync());
            Assert.Equal(FastStaticFileOptions.ImmutableCacheControl, current.Header("Cache-Control"));
        }
    }

    [Theory]
    [InlineData("caf\u00e9.css", "caf%C3%A9.css")]
    [InlineData("two words.css", "two%20words.css")]
    [InlineData("q%3F.css", "q%253F.css")]
    public async Task A_stale_hash_of_a_name_that_needs_escaping_redirects_to_its_escaped_url(string name, string escaped)
    {
        byte[] bytes = _files.Create("reports/" + name, 500, seed: 3);
        string stale = $"/reports/{escaped}?lang=en&v=AAAAAAAAAAAAAAAAAAAAAA&x=%20";
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage response = await _host.SendAsync(transport, stale);
            Assert.Equal(HttpStatusCode.Found, response.StatusCode);
            string location = response.Headers.Location!.OriginalString;
            Assert.Equal($"/reports/{escaped}?lang=en&v={Hash(bytes)}&x=%20", location);

            // The escaped URL names the same file, served as current.
            using HttpResponseMessage current = await _host.SendAsync(transport, location);
            Assert.Equal(bytes, await current.Content.ReadAsByteArrayAsync());
            Assert.Equal(FastStaticFileOptions.ImmutableCacheControl, current.Header("Cache-Control"));
        }
    }

    [Fact]
    public async Task A_large_file_gets_its_url_once_hashed_and_unknown_paths_stay_as_they_are()
    {
        byte[] big = _files.Create("reports/big.bin.css", 2 * 1024 * 1024);
        string url = await Fingerprinter.GetUrlAsync("/reports/big.bin.css");
        Assert.Equal($"/reports/big.bin.css?v={Hash(big)}", url);

        // Without waiting: the plain path while the hash is computed (a late change notification for the new file may
        // start it again), then the same URL.
        DateTime deadline = DateTime.UtcNow + Eventually;
        string immediate;
        while ((immediate = Fingerprinter.GetUrl("/reports/big.bin.css")) != url && DateTime.UtcNow < deadline)
        {
            Assert.Equal("/reports/big.bin.css", immediate);
            await Task.Delay(20);
        }

        Assert.Equal(url, immediate);
        using HttpResponseMessage response = await _host.SendAsync(Transport.H2Tls, url);
        Assert.Equal(big, await response.Content.ReadAsByteArrayAsync());
        Assert.Equal(FastStaticFileOptions.ImmutableCacheControl, response.Header("Cache-Control"));

        Assert.Equal("/reports/missing.css", Fingerprinter.GetUrl("/reports/missing.css"));
        Assert.Equal("/elsewhere/a.css", await Fingerprinter.GetUrlAsync("/elsewhere/a.css"));
        Assert.Equal("/reports/../secret.css", Fingerprinter.GetUrl("/reports/../secret.css"));
        using HttpResponseMessage missing = await _host.SendAsync(Transport.Http11, "/reports/missing.css?v=AAAAAAAAAAAAAAAAAAAAAA");
        Assert.Equal(HttpStatusCode.NotFound, missing.StatusCode);
    }
}
