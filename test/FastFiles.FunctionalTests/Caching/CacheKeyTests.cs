using System.Diagnostics.Metrics;
using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Caching;

/// <summary>
/// One file, one cache entry: every request form that names a file (empty segments, the prefix in another case, a
/// directory for its default file) shares the entry the watcher drops when the file changes, so no form keeps a deleted
/// file's descriptor open or hashes the file again per request, and no redirect built from such a form names another
/// host.
/// </summary>
public sealed class CacheKeyTests : IAsyncLifetime
{
    private readonly TestFiles _files = new();
    private TestHost _host = null!;
    private byte[] _big = null!;

    private string Root => _files.PathOf("www");

    public async Task InitializeAsync()
    {
        _files.Write("www/evil.example/index.html", Encoding.ASCII.GetBytes("x"));

        // Written before the host starts: the watcher's events for a file written under it arrive when they arrive, and
        // one that came after the first request would drop the entry that request built (a second miss, once in CI).
        // Over MaxCachedFileSize: the entry keeps the file's descriptor, one per entry.
        _big = _files.Create("www/big.bin", 200_000);
        // The same for a directory's default file whose entry keeps its descriptor: created after the start, it lost
        // its entry (and the descriptor the test looks for) to that event once in a full run.
        _files.Create("www/site/index.html", 100_000);
        _host = await TestHost.StartAsync(app =>
        {
            app.UseFastFiles(new FastStaticFileOptions
            {
                RequestPath = "/hash",
                FileProvider = new PhysicalFileProvider(Root),
                EnableContentHashETags = true,
                ServeUnknownFileTypes = true,
            });
            app.UseFastFiles(new FastStaticFileOptions
            {
                FileProvider = new PhysicalFileProvider(Root),
                DefaultFileNames = ["index.html"],
                ServeUnknownFileTypes = true,
            });
        });
    }

    public async Task DisposeAsync()
    {
        await _host.DisposeAsync();
        _files.Dispose();
    }

    [Fact]
    public async Task Every_form_of_a_path_shares_one_entry_and_one_descriptor()
    {
        byte[] big = _big;
        IMeterFactory meters = _host.Services.GetRequiredService<IMeterFactory>();
        using var hits = new InstrumentRecorder(meters, "fastfiles.cache.hits");
        using var misses = new InstrumentRecorder(meters, "fastfiles.cache.misses");

        string? tag = null;
        foreach (string target in new[] { "/hash/big.bin", "/hash//big.bin", "/HASH/big.bin", "/Hash///big.bin", "/hash/big.bin" })
        {
            using HttpResponseMessage response = await _host.SendAsync(Transport.Http11, target);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(big, await response.Content.ReadAsByteArrayAsync());
            tag ??= response.Headers.ETag?.Tag;
            Assert.Equal(tag, response.Headers.ETag?.Tag);
        }

        // The first request builds the entry; the other four find it, whatever their form.
        Assert.Equal(1, misses.Total);
        Assert.Equal(4, hits.Total);
        await ResponseHeaders.AssertAtMostCachedFilesOpenUnderAsync(_files.Root);
        Assert.Single(OpenFileDescriptors.TargetsUnder(_files.Root));

        // Under the root without a prefix, "//big.bin" is "/big.bin": after a delete no form holds the old descriptor.
        Assert.Equal(200, (await RawHttp.SendAsync(_host.Http, "//big.bin")).Status);
        Assert.Equal(200, (await RawHttp.SendAsync(_host.Http, "///big.bin")).Status);
        File.Delete(_files.PathOf("www/big.bin"));
        await ResponseHeaders.AssertAtMostCachedFilesOpenUnderAsync(_files.Root);
        Assert.Equal(404, (await RawHttp.SendAsync(_host.Http, "//big.bin")).Status);
        Assert.Equal(404, (await RawHttp.SendAsync(_host.Http, "/HASH//big.bin")).Status);
    }

    [Fact]
    public async Task A_deleted_default_file_is_not_held_open_by_its_directory()
    {
        Assert.Equal(200, (await RawHttp.SendAsync(_host.Http, "/site/")).Status);
        Assert.Single(OpenFileDescriptors.TargetsUnder(_files.PathOf("www/site")));

        File.Delete(_files.PathOf("www/site/index.html"));
        await ResponseHeaders.AssertAtMostCachedFilesOpenUnderAsync(_files.Root);
        Assert.Empty(OpenFileDescriptors.TargetsUnder(_files.PathOf("www/site")));
    }

    [Theory]
    [InlineData("//evil.example", "/evil.example/")]
    [InlineData("///evil.example?q=1", "/evil.example/?q=1")]
    [InlineData("/evil.example", "/evil.example/")]
    public async Task A_directory_redirect_stays_on_this_host(string target, string location)
    {
        // "//evil.example/" would be a network-path reference (RFC 3986 4.2): a browser would go to host evil.example.
        RawResponse response = await RawHttp.SendAsync(_host.Http, target);
        Assert.Equal(301, response.Status);
        Assert.Equal(location, response.Headers["Location"]);
    }

    [Theory]
    [Transports]
    public async Task A_modification_time_in_the_future_is_never_later_than_Date(Transport transport)
    {
        // Nanoseconds since 1970 no longer fit 64 bits from 2262-04-11 on (ext4 keeps times up to 2446): the time read
        // must be 2300, not 1715 (FileStamp's own tests), and, being in the future, it is sent as the response's time
        // (RFC 9110 8.8.2.1) by the cached and the uncached path alike, and validates what it sent.
        string name = $"y2300-{transport}.txt";
        _files.Write("www/" + name, Encoding.ASCII.GetBytes("y2300"));
        File.SetLastWriteTimeUtc(_files.PathOf("www/" + name), new DateTime(2300, 1, 1, 0, 0, 0, DateTimeKind.Utc));
        foreach (string target in new[] { "/" + name, "/hash/" + name, "/" + name })
        {
            DateTimeOffset before = DateTimeOffset.UtcNow.AddMinutes(-1);
            using HttpResponseMessage response = await _host.SendAsync(transport, target);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            DateTimeOffset lastModified = response.Content.Headers.LastModified!.Value;
            Assert.InRange(lastModified, before, response.Headers.Date!.Value);
            using HttpResponseMessage revalidated = await _host.SendAsync(
                transport, target, m => m.Headers.TryAddWithoutValidation("If-Modified-Since", response.Header("Last-Modified")));
            Assert.Equal(HttpStatusCode.NotModified, revalidated.StatusCode);
        }
    }
}
