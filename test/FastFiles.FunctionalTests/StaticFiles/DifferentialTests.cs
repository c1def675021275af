using System.Globalization;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// UseStaticFiles (<c>/stock</c>) and UseFastFiles (<c>/fast</c>) over the same folder, request by request: equal
/// except for the documented differences, each asserted explicitly. <c>/stockfast</c> is UseStaticFiles on top of
/// UseFastSendFile and must be indistinguishable from <c>/stock</c>.
/// </summary>
public sealed class DifferentialTests(DifferentialTests.Fixture fixture) : IClassFixture<DifferentialTests.Fixture>
{
    private const int Length = 10_000;
    private const string Huge = "123456789012345678901234567890";
    private static readonly DateTime Modified = new DateTime(2022, 3, 4, 5, 6, 7, DateTimeKind.Utc).AddTicks(7_654_321);
    private static readonly DateTimeOffset ModifiedSeconds = new(2022, 3, 4, 5, 6, 7, TimeSpan.Zero);
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {

        protected override async Task<TestHost> StartHostAsync()
        {
            foreach ((string name, int length) in new[] { ("data.txt", Length), ("empty.txt", 0), ("one.txt", 1), ("app.3f2a9c1b.js", 300), ("page.js", 2000), ("page.js.gz", 500), ("blob.bin", 1000), ("with space.txt", 10), ("ünïcødé.txt", 10), ("dir/inner.txt", 10), ("noext", 10), ("UPPER.TXT", 10) })
            {
                Files.Create(name, length);
                File.SetLastWriteTimeUtc(Files.PathOf(name), Modified);
            }

            return await TestHost.StartAsync(app =>
            {
                app.Map("/stockfast", branch =>
                {
                    branch.UseFastSendFile();
                    branch.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(Files.Root) });
                });
                app.UseStaticFiles(new StaticFileOptions { RequestPath = "/stock", FileProvider = new PhysicalFileProvider(Files.Root) });
                app.UseFastFiles(new FastStaticFileOptions { RequestPath = "/fast", FileProvider = new PhysicalFileProvider(Files.Root) });
            });
        }
    }

    /// <summary>One request; "{etag}" is replaced by the answering server's own ETag.</summary>
    private static readonly Dictionary<string, (string File, string Method, (string Name, string Value)[] Headers)> Cases = new()
    {
        ["get"] = ("data.txt", "GET", []),
        ["get-empty"] = ("empty.txt", "GET", []),
        ["get-one"] = ("one.txt", "GET", []),
        ["get-bin"] = ("blob.bin", "GET", []),
        ["get-space"] = ("with space.txt", "GET", []),
        ["get-unicode"] = ("ünïcødé.txt", "GET", []),
        ["get-nested"] = ("dir/inner.txt", "GET", []),
        ["get-directory"] = ("dir", "GET", []),
        ["get-directory-slash"] = ("dir/", "GET", []),
        ["get-file-slash"] = ("data.txt/", "GET", []),
        ["get-no-extension"] = ("noext", "GET", []),
        ["get-upper-extension"] = ("UPPER.TXT", "GET", []),
        ["get-wrong-case"] = ("DATA.TXT", "GET", []),
        ["get-query"] = ("data.txt?v=1&x", "GET", []),
        ["get-missing"] = ("missing.txt", "GET", []),
        ["head"] = ("data.txt", "HEAD", []),
        ["head-range"] = ("data.txt", "HEAD", [("Range", "bytes=0-9")]),
        ["post"] = ("data.txt", "POST", []),
        ["range-first-byte"] = ("data.txt", "GET", [("Range", "bytes=0-0")]),
        ["range-last-byte"] = ("data.txt", "GET", [("Range", "bytes=9999-9999")]),
        ["range-open"] = ("data.txt", "GET", [("Range", "bytes=100-")]),
        ["range-middle"] = ("data.txt", "GET", [("Range", "bytes=100-4195")]),
        ["range-suffix"] = ("data.txt", "GET", [("Range", "bytes=-100")]),
        ["range-suffix-longer"] = ("data.txt", "GET", [("Range", "bytes=-20000")]),
        ["range-past-end"] = ("data.txt", "GET", [("Range", "bytes=5000-99999")]),
        ["range-whole"] = ("data.txt", "GET", [("Range", "bytes=0-")]),
        ["range-one-byte-file"] = ("one.txt", "GET", [("Range", "bytes=0-0")]),
        ["range-unsatisfiable"] = ("data.txt", "GET", [("Range", "bytes=10000-")]),
        ["range-unsatisfiable-far"] = ("data.txt", "GET", [("Range", "bytes=20000-30000")]),
        ["range-suffix-zero"] = ("data.txt", "GET", [("Range", "bytes=-0")]),
        ["range-empty-file"] = ("empty.txt", "GET", [("Range", "bytes=0-")]),
        ["range-multi"] = ("data.txt", "GET", [("Range", "bytes=0-1,5-6")]),
        ["range-many"] = ("data.txt", "GET", [("Range", string.Join(',', Enumerable.Range(0, 50).Select(i => $"{i * 10}-{(i * 10) + 5}")).Insert(0, "bytes="))]),
        ["range-malformed"] = ("data.txt", "GET", [("Range", "bytes=abc")]),
        ["range-reversed"] = ("data.txt", "GET", [("Range", "bytes=5-1")]),
        ["range-other-unit"] = ("data.txt", "GET", [("Range", "items=0-1")]),
        ["range-no-spec"] = ("data.txt", "GET", [("Range", "bytes=")]),
        ["range-trailing-comma"] = ("data.txt", "GET", [("Range", "bytes=0-1,")]),
        ["range-huge-last"] = ("data.txt", "GET", [("Range", "bytes=0-" + Huge)]),
        ["range-huge-first"] = ("data.txt", "GET", [("Range", "bytes=" + Huge + "-")]),
        ["range-huge-suffix"] = ("data.txt", "GET", [("Range", "bytes=-" + Huge)]),
        ["if-match"] = ("data.txt", "GET", [("If-Match", "{etag}")]),
        ["if-match-star"] = ("data.txt", "GET", [("If-Match", "*")]),
        ["if-match-other"] = ("data.txt", "GET", [("If-Match", "\"nope\"")]),
        ["if-match-weak"] = ("data.txt", "GET", [("If-Match", "W/{etag}")]),
        ["if-none-match"] = ("data.txt", "GET", [("If-None-Match", "{etag}")]),
        ["if-none-match-list"] = ("data.txt", "GET", [("If-None-Match", "\"a\", {etag}")]),
        ["if-none-match-star"] = ("data.txt", "GET", [("If-None-Match", "*")]),
        ["if-none-match-other"] = ("data.txt", "GET", [("If-None-Match", "\"nope\"")]),
        ["if-none-match-weak"] = ("data.txt", "GET", [("If-None-Match", "W/{etag}")]),
        ["head-if-none-match"] = ("data.txt", "HEAD", [("If-None-Match", "{etag}")]),
        ["if-modified-since-equal"] = ("data.txt", "GET", [("If-Modified-Since", Date(0))]),
        ["if-modified-since-past"] = ("data.txt", "GET", [("If-Modified-Since", Date(-10))]),
        ["if-modified-since-later"] = ("data.txt", "GET", [("If-Modified-Since", Date(3600))]),
        ["if-modified-since-future"] = ("data.txt", "GET", [("If-Modified-Since", ResponseHeaders.HttpDate(DateTimeOffset.UtcNow.AddYears(3)))]),
        ["if-modified-since-garbage"] = ("data.txt", "GET", [("If-Modified-Since", "yesterday")]),
        ["if-unmodified-since-equal"] = ("data.txt", "GET", [("If-Unmodified-Since", Date(0))]),
        ["if-unmodified-since-past"] = ("data.txt", "GET", [("If-Unmodified-Since", Date(-10))]),
        ["if-unmodified-since-future"] = ("data.txt", "GET", [("If-Unmodified-Since", ResponseHeaders.HttpDate(DateTimeOffset.UtcNow.AddYears(3)))]),
        ["if-match-and-ius-past"] = ("data.txt", "GET", [("If-Match", "{etag}"), ("If-Unmodified-Since", Date(-10))]),
        ["inm-other-and-ims-equal"] = ("data.txt", "GET", [("If-None-Match", "\"nope\""), ("If-Modified-Since", Date(0))]),
        ["inm-and-range"] = ("data.txt", "GET", [("If-None-Match", "{etag}"), ("Range", "bytes=0-0")]),
        ["if-match-other-and-range"] = ("data.txt", "GET", [("If-Match", "\"nope\""), ("Range", "bytes=0-0")]),
        ["if-range-etag"] = ("data.txt", "GET", [("If-Range", "{etag}"), ("Range", "bytes=10-19")]),
        ["if-range-other"] = ("data.txt", "GET", [("If-Range", "\"nope\""), ("Range", "bytes=10-19")]),
        ["if-range-weak"] = ("data.txt", "GET", [("If-Range", "W/{etag}"), ("Range", "bytes=10-19")]),
        ["if-range-date-equal"] = ("data.txt", "GET", [("If-Range", Date(0)), ("Range", "bytes=10-19")]),
        ["if-range-date-earlier"] = ("data.txt", "GET", [("If-Range", Date(-10)), ("Range", "bytes=10-19")]),
        ["if-range-date-later"] = ("data.txt", "GET", [("If-Range", Date(3600)), ("Range", "bytes=10-19")]),
        ["if-range-unsatisfiable"] = ("data.txt", "GET", [("If-Range", "{etag}"), ("Range", "bytes=20000-")]),
        ["fingerprinted"] = ("app.3f2a9c1b.js", "GET", []),
        ["sidecar"] = ("page.js", "GET", [("Accept-Encoding", "gzip")]),
    };

    public static TheoryData<string> CaseNames()
    {
        var data = new TheoryData<string>();
        foreach (string name in Cases.Keys)
        {
            data.Add(name);
        }

        return data;
    }

    public static TheoryData<Transport, string> TransportsAndCases()
    {
        var data = new TheoryData<Transport, string>();
        foreach (Transport transport in TransportMatrix.Default)
        {
            foreach (string name in Cases.Keys)
            {
                data.Add(transport, name);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(TransportsAndCases))]
    public async Task Stock_and_fast_agree_except_where_documented(Transport transport, string name)
    {
        Snapshot stock = await SendAsync(transport, "/stock", name);
        Snapshot fast = await SendAsync(transport, "/fast", name);
        byte[] data = File.ReadAllBytes(_f.Files.PathOf("data.txt"));

        switch (name)
        {
            case "if-none-match-weak":
                // RFC 9110 13.1.2: If-None-Match uses the weak comparison, so W/"x" matches "x". Stock compares strongly.
                Assert.Equal(200, stock.Status);
                Assert.Equal(304, fast.Status);
                AssertNotModified(fast);
                break;

            case "if-none-match" or "if-none-match-list" or "if-none-match-star" or "head-if-none-match" or "inm-and-range"
                or "if-modified-since-equal" or "if-modified-since-later":
                // Both 304 with the same validators; RFC 9110 15.4.5: FastFiles' 304 carries no Content-Type or
                // Accept-Ranges (stock sends both).
                Assert.Equal(304, stock.Status);
                Assert.Equal(304, fast.Status);
                Assert.Equal(stock.Header("Last-Modified"), fast.Header("Last-Modified"));
                Assert.NotNull(stock.Header("ETag"));
                Assert.Equal("text/plain", stock.Header("Content-Type"));
                Assert.Equal("bytes", stock.Header("Accept-Ranges"));
                AssertNotModified(fast);
                Assert.Empty(stock.Body);
                break;

            case "range-multi" or "range-many":
                // RFC 9110 14.6: several ranges are a multipart/byteranges 206 (MultiRangeTests reads the parts back).
                // Stock answers any multi-range with the whole file.
                AssertWhole(stock, data);
                Assert.Equal(206, fast.Status);
                Assert.StartsWith("multipart/byteranges; boundary=", fast.Header("Content-Type"), StringComparison.Ordinal);
                break;

            case "range-trailing-comma":
                // RFC 9110 5.6.1: empty list elements are ignored, so "bytes=0-1," is one range. Stock treats any
                // comma as a multi-range and sends 200.
                AssertWhole(stock, data);
                AssertPartial(fast, data, 0, 2);
                break;

            case "range-other-unit":
                // RFC 9110 14.2: a Range with an unknown unit is ignored. Stock serves "items=0-1" as if it were bytes.
                AssertPartial(stock, data, 0, 2);
                AssertWhole(fast, data);
                break;

            case "range-huge-last":
                // RFC 9110 14.1.1: last-pos is 1*DIGIT with no bound; one past the end means "to the end". Stock
                // cannot parse the number and ignores the header.
                AssertWhole(stock, data);
                AssertPartial(fast, data, 0, Length);
                break;

            case "range-huge-suffix":
                // A suffix longer than the representation selects all of it (RFC 9110 14.1.3).
                AssertWhole(stock, data);
                AssertPartial(fast, data, 0, Length);
                break;

            case "range-huge-first":
                // A first-pos beyond the length is unsatisfiable (RFC 9110 14.1.1, 15.5.17).
                AssertWhole(stock, data);
                Assert.Equal(416, fast.Status);
                Assert.Equal($"bytes */{Length}", fast.Header("Content-Range"));
                break;

            case "if-match-and-ius-past":
                // RFC 9110 13.2.2: when If-Match is present (and passes) If-Unmodified-Since is not evaluated.
                // Stock evaluates both and answers 412.
                Assert.Equal(412, stock.Status);
                AssertWhole(fast, data);
                break;

            case "if-range-date-later":
                // RFC 9110 13.1.5: an If-Range date must exactly match Last-Modified. Stock accepts any date at or
                // after it.
                AssertPartial(stock, data, 10, 10);
                AssertWhole(fast, data);
                break;

            case "sidecar":
                // Precompressed sidecars: stock ignores page.js.gz.
                Assert.Equal(200, stock.Status);
                Assert.Null(stock.Header("Content-Encoding"));
                Assert.Null(stock.Header("Vary"));
                Assert.Equal(File.ReadAllBytes(_f.Files.PathOf("page.js")), stock.Body);
                Assert.Equal(200, fast.Status);
                Assert.Equal("gzip", fast.Header("Content-Encoding"));
                Assert.Equal("Accept-Encoding", fast.Header("Vary"));
                Assert.Equal(File.ReadAllBytes(_f.Files.PathOf("page.js.gz")), fast.Body);
                Assert.Equal(stock.Header("Content-Type"), fast.Header("Content-Type"));
                Assert.Equal(stock.Header("Last-Modified"), fast.Header("Last-Modified"));
                break;

            case "fingerprinted":
                // Cache-Control: stock has no option; FastFiles marks content-hashed names immutable.
                AssertSame(stock, fast);
                Assert.Null(stock.Header("Cache-Control"));
                Assert.Equal(FastStaticFileOptions.ImmutableCacheControl, fast.Header("Cache-Control"));
                break;

            case "get":
                AssertSame(stock, fast);
                // ETag formats differ: FastFiles keeps the full-precision mtime and the length, in hex.
                Assert.Equal(string.Create(CultureInfo.InvariantCulture, $"\"{Modified.Ticks:x}-{Length:x}\""), fast.Header("ETag"));
                Assert.NotEqual(stock.Header("ETag"), fast.Header("ETag"));
                break;

            default:
                AssertSame(stock, fast);
                Assert.Equal(stock.Header("ETag") is null, fast.Header("ETag") is null);
                Assert.Null(fast.Header("Cache-Control"));
                Assert.Null(fast.Header("Vary"));
                break;
        }
    }

    [Theory]
    [MemberData(nameof(CaseNames))]
    public async Task Static_files_on_fast_send_file_is_indistinguishable_from_stock(string name)
    {
        Snapshot stock = await SendAsync(Transport.Http11, "/stock", name);
        Snapshot stockFast = await SendAsync(Transport.Http11, "/stockfast", name);
        AssertSame(stock, stockFast);
        Assert.Equal(stock.Header("ETag"), stockFast.Header("ETag"));
        Assert.Equal(stock.Header("Content-Encoding"), stockFast.Header("Content-Encoding"));
    }

    private static void AssertNotModified(Snapshot fast)
    {
        Assert.NotNull(fast.Header("ETag"));
        Assert.Equal(ResponseHeaders.HttpDate(ModifiedSeconds), fast.Header("Last-Modified"));
        Assert.Null(fast.Header("Content-Type"));
        Assert.Null(fast.Header("Accept-Ranges"));
        Assert.Empty(fast.Body);
    }

    private static void AssertWhole(Snapshot response, byte[] data)
    {
        Assert.Equal(200, response.Status);
        Assert.Null(response.Header("Content-Range"));
        Assert.Equal(data, response.Body);
    }

    private static void AssertPartial(Snapshot response, byte[] data, int start, int count)
    {
        Assert.Equal(206, response.Status);
        Assert.Equal(string.Create(CultureInfo.InvariantCulture, $"bytes {start}-{start + count - 1}/{data.Length}"), response.Header("Content-Range"));
        Assert.Equal(data.AsSpan(start, count).ToArray(), response.Body);
    }

    private static string Date(int secondsFromModified) => ResponseHeaders.HttpDate(ModifiedSeconds.AddSeconds(secondsFromModified));

    private static void AssertSame(Snapshot expected, Snapshot actual)
    {
        Assert.Equal(expected.Status, actual.Status);
        foreach (string header in new[] { "Content-Length", "Content-Range", "Accept-Ranges", "Content-Type", "Last-Modified" })
        {
            Assert.True(expected.Header(header) == actual.Header(header), $"{header}: '{expected.Header(header)}' vs '{actual.Header(header)}' (status {expected.Status})");
        }

        Assert.Equal(expected.Body, actual.Body);
    }

    private async Task<Snapshot> SendAsync(Transport transport, string prefix, string name)
    {
        (string file, string method, (string Name, string Value)[] headers) = Cases[name];
        string etag = "\"unknown\"";
        if (headers.Any(h => h.Value.Contains("{etag}", StringComparison.Ordinal)))
        {
            using HttpResponseMessage plain = await _f.Host.SendAsync(transport, $"{prefix}/{file}");
            etag = plain.Header("ETag")!;
        }

        using HttpResponseMessage response = await _f.Host.SendAsync(transport, $"{prefix}/{file}", r =>
        {
            foreach ((string header, string value) in headers)
            {
                r.Headers.TryAddWithoutValidation(header, value.Replace("{etag}", etag, StringComparison.Ordinal));
            }
        }, new HttpMethod(method));
        var snapshot = new Snapshot((int)response.StatusCode, await response.Content.ReadAsByteArrayAsync());
        foreach (var header in response.Headers.NonValidated.Concat(response.Content.Headers.NonValidated))
        {
            snapshot.Headers[header.Key] = string.Join(", ", header.Value);
        }

        return snapshot;
    }

    private sealed record Snapshot(int Status, byte[] Body)
    {
        public Dictionary<string, string> Headers { get; } = new(StringComparer.OrdinalIgnoreCase);

        public string? Header(string name) => Headers.TryGetValue(name, out string? value) ? value : null;
    }
}
