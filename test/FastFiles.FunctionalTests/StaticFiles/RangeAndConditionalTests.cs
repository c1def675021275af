using System.Globalization;
using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>Ranges (RFC 9110 14) and preconditions (RFC 9110 13) of UseFastFiles over HTTP/1.1 and h2c.</summary>
public sealed class RangeAndConditionalTests(RangeAndConditionalTests.Fixture fixture) : IClassFixture<RangeAndConditionalTests.Fixture>
{
    private const int Length = 10_000;
    private const string Huge = "123456789012345678901234567890";
    private static readonly DateTime Modified = new DateTime(2020, 1, 2, 3, 4, 5, DateTimeKind.Utc).AddTicks(1_234_567);
    private static readonly DateTimeOffset ModifiedSeconds = new(2020, 1, 2, 3, 4, 5, TimeSpan.Zero);
    private readonly TestFiles _files = fixture.Files;
    private readonly byte[] _content = fixture.Content;
    private readonly TestHost _host = fixture.Host;

    private static string ExpectedETag => string.Create(CultureInfo.InvariantCulture, $"\"{Modified.Ticks:x}-{Length:x}\"");

    public sealed class Fixture : HostFixture
    {
        public byte[] Content { get; private set; } = [];

        protected override async Task<TestHost> StartHostAsync()
        {
            Content = Files.Create("data.bin", Length);
            File.SetLastWriteTimeUtc(Files.PathOf("data.bin"), Modified);
            Files.Create("empty.bin", 0);
            return await TestHost.StartAsync(app =>
            {
                app.UseFastFiles(new FastStaticFileOptions
                {
                    FileProvider = new PhysicalFileProvider(Files.Root),
                    ServeUnknownFileTypes = true,
                    DefaultContentType = "application/octet-stream",
                });
                // What the rest of the pipeline answers for anything UseFastFiles passes on.
                app.Run(context =>
                {
                    context.Response.StatusCode = StatusCodes.Status405MethodNotAllowed;
                    return Task.CompletedTask;
                });
            });
        }
    }

    [Theory]
    [Transports]
    public async Task Get_sends_validators_and_accept_ranges(Transport transport)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin");
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(_content, await response.Content.ReadAsByteArrayAsync());
        Assert.Equal("bytes", response.Header("Accept-Ranges"));
        // Full-precision mtime and length, in hex: a strong validator.
        Assert.Equal(ExpectedETag, response.Header("ETag"));
        Assert.Equal(ResponseHeaders.HttpDate(ModifiedSeconds), response.Header("Last-Modified"));
        Assert.Null(response.Header("Content-Range"));
        Assert.Null(response.Header("Vary"));
        Assert.Null(response.Header("Cache-Control"));
    }

    [Theory]
    [Transports]
    public async Task Head_has_the_headers_of_get_and_no_body(Transport transport)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", method: HttpMethod.Head);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(Length, response.Content.Headers.ContentLength);
        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
        Assert.Equal(ExpectedETag, response.Header("ETag"));
        Assert.Equal("bytes", response.Header("Accept-Ranges"));
        Assert.Equal("application/octet-stream", response.Header("Content-Type"));
    }

    [Theory]
    [Transports]
    public async Task Head_ignores_range(Transport transport)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", r => r.Headers.TryAddWithoutValidation("Range", "bytes=0-9"), HttpMethod.Head);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(Length, response.Content.Headers.ContentLength);
        Assert.Null(response.Header("Content-Range"));
    }

    [Theory]
    [Transports]
    public async Task Other_methods_pass_to_the_rest_of_the_pipeline(Transport transport)
    {
        foreach (HttpMethod method in new[] { HttpMethod.Post, HttpMethod.Put, HttpMethod.Delete, HttpMethod.Options, HttpMethod.Patch })
        {
            using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", method: method);
            Assert.Equal(HttpStatusCode.MethodNotAllowed, response.StatusCode);
            Assert.Null(response.Header("ETag"));
            Assert.Empty(await response.Content.ReadAsByteArrayAsync());
        }
    }

    public static TheoryData<Transport, string, long, long> SatisfiableRanges()
    {
        var data = new TheoryData<Transport, string, long, long>();
        foreach (Transport t in TransportMatrix.Default)
        {
            data.Add(t, "bytes=0-0", 0, 1);
            data.Add(t, "bytes=0-", 0, Length);
            data.Add(t, "bytes=1-", 1, Length - 1);
            data.Add(t, "bytes=9999-", 9999, 1);
            data.Add(t, "bytes=9999-9999", 9999, 1);
            data.Add(t, "bytes=100-199", 100, 100);
            data.Add(t, "bytes=5000-20000", 5000, 5000);
            data.Add(t, "bytes=-1", 9999, 1);
            data.Add(t, "bytes=-500", 9500, 500);
            data.Add(t, "bytes=-20000", 0, Length);
            data.Add(t, "bytes=10-" + Huge, 10, Length - 10);
            data.Add(t, "bytes=-" + Huge, 0, Length);
            data.Add(t, "bytes=4096-8191", 4096, 4096);
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(SatisfiableRanges))]
    public async Task Single_range_is_206_with_content_range(Transport transport, string range, long start, long count)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", r => r.Headers.TryAddWithoutValidation("Range", range));
        Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
        Assert.Equal(string.Create(CultureInfo.InvariantCulture, $"bytes {start}-{start + count - 1}/{Length}"), response.Header("Content-Range"));
        Assert.Equal(count, response.Content.Headers.ContentLength);
        Assert.Equal(_content.AsSpan((int)start, (int)count).ToArray(), await response.Content.ReadAsByteArrayAsync());
        Assert.Equal(ExpectedETag, response.Header("ETag"));
        Assert.Equal("bytes", response.Header("Accept-Ranges"));
    }

    [Theory]
    [InlineData(Transport.Http11, "/data.bin", "bytes=10000-", Length)]
    [InlineData(Transport.Http11, "/data.bin", "bytes=10000-10000", Length)]
    [InlineData(Transport.Http11, "/data.bin", "bytes=123456-", Length)]
    [InlineData(Transport.Http11, "/data.bin", "bytes=-0", Length)]
    [InlineData(Transport.Http11, "/data.bin", "bytes=" + Huge + "-", Length)]
    [InlineData(Transport.Http11, "/empty.bin", "bytes=0-", 0)]
    [InlineData(Transport.H2c, "/data.bin", "bytes=10000-", Length)]
    [InlineData(Transport.H2c, "/data.bin", "bytes=" + Huge + "-" + Huge, Length)]
    [InlineData(Transport.H2c, "/empty.bin", "bytes=0-0", 0)]
    public async Task Unsatisfiable_range_is_416_with_the_length(Transport transport, string path, string range, long length)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("Range", range));
        Assert.Equal(HttpStatusCode.RequestedRangeNotSatisfiable, response.StatusCode);
        Assert.Equal(string.Create(CultureInfo.InvariantCulture, $"bytes */{length}"), response.Header("Content-Range"));
        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
    }

    // Malformed sets, and (RFC 9110 14.1.2) a suffix of an empty representation: its one satisfiable range, which no
    // Content-Range can express. The Range is ignored.
    [Theory]
    [InlineData(Transport.Http11, "/data.bin", "bytes=5-1")]
    [InlineData(Transport.Http11, "/data.bin", "bytes=0-1,5-1")]
    [InlineData(Transport.Http11, "/data.bin", "bytes=abc")]
    [InlineData(Transport.Http11, "/data.bin", "bytes=")]
    [InlineData(Transport.Http11, "/data.bin", "bytes=--5")]
    [InlineData(Transport.Http11, "/data.bin", "pages=0-1")]
    [InlineData(Transport.Http11, "/data.bin", "bytes 0-1")]
    [InlineData(Transport.H2c, "/data.bin", "bytes=0-1,5-x")]
    [InlineData(Transport.H2c, "/data.bin", "bytes=x-y")]
    [InlineData(Transport.Http11, "/empty.bin", "bytes=-1")]
    [InlineData(Transport.Http11, "/empty.bin", "bytes=-1,0-5")]
    [InlineData(Transport.H2c, "/empty.bin", "bytes=-100")]
    public async Task Ignored_ranges_are_a_plain_200(Transport transport, string path, string range)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("Range", range));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Null(response.Header("Content-Range"));
        Assert.Equal(path == "/empty.bin" ? [] : _content, await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Two_range_field_lines_are_a_plain_200()
    {
        RawResponse response = await RawHttp.SendAsync(_host.Http, "/data.bin", extraHeaders: "Range: bytes=0-1\r\nRange: bytes=4-5\r\n");
        Assert.Equal(200, response.Status);
        Assert.Equal(_content, response.Body);
    }

    public static TheoryData<Transport, string, string, int> Preconditions()
    {
        string etag = ExpectedETag;
        string lm = ResponseHeaders.HttpDate(ModifiedSeconds);
        string before = ResponseHeaders.HttpDate(ModifiedSeconds.AddSeconds(-1));
        string after = ResponseHeaders.HttpDate(ModifiedSeconds.AddDays(1));
        string future = ResponseHeaders.HttpDate(DateTimeOffset.UtcNow.AddYears(5));
        var data = new TheoryData<Transport, string, string, int>();
        foreach (Transport t in TransportMatrix.Default)
        {
            // If-Match (13.1.1): strong comparison.
            data.Add(t, "If-Match", etag, 200);
            data.Add(t, "If-Match", "\"nope\", " + etag, 200);
            data.Add(t, "If-Match", "*", 200);
            data.Add(t, "If-Match", "\"nope\"", 412);
            data.Add(t, "If-Match", "W/" + etag, 412);
            // Neither "*" nor a list of entity-tags: a false condition.
            data.Add(t, "If-Match", "garbage", 412);
            // If-None-Match (13.1.2): weak comparison.
            data.Add(t, "If-None-Match", etag, 304);
            data.Add(t, "If-None-Match", "W/" + etag, 304);
            data.Add(t, "If-None-Match", "\"a\", W/" + etag, 304);
            data.Add(t, "If-None-Match", "*", 304);
            data.Add(t, "If-None-Match", "\"nope\"", 200);
            // If-Modified-Since (13.1.3).
            data.Add(t, "If-Modified-Since", lm, 304);
            data.Add(t, "If-Modified-Since", after, 304);
            data.Add(t, "If-Modified-Since", before, 200);
            data.Add(t, "If-Modified-Since", future, 200);
            data.Add(t, "If-Modified-Since", "not a date", 200);
            // If-Unmodified-Since (13.1.4).
            data.Add(t, "If-Unmodified-Since", lm, 200);
            data.Add(t, "If-Unmodified-Since", after, 200);
            data.Add(t, "If-Unmodified-Since", before, 412);
            data.Add(t, "If-Unmodified-Since", "garbage", 200);
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Preconditions))]
    public async Task Single_precondition(Transport transport, string header, string value, int expected)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", r => r.Headers.TryAddWithoutValidation(header, value));
        await AssertStatusAsync(response, expected);
    }

    [Theory]
    [Transports]
    public async Task Precondition_precedence_follows_rfc_9110_13_2_2(Transport transport)
    {
        string etag = ExpectedETag;
        string lm = ResponseHeaders.HttpDate(ModifiedSeconds);
        string before = ResponseHeaders.HttpDate(ModifiedSeconds.AddSeconds(-1));

        // Step 1 passes, so step 2 (If-Unmodified-Since) is not evaluated.
        await AssertAsync(200, ("If-Match", etag), ("If-Unmodified-Since", before));
        // Step 1 fails: 412 even though If-None-Match would give 304.
        await AssertAsync(412, ("If-Match", "\"nope\""), ("If-None-Match", etag));
        // Step 2 fails before If-None-Match is looked at.
        await AssertAsync(412, ("If-Unmodified-Since", before), ("If-None-Match", etag));
        // Step 3 present and not matching: If-Modified-Since (step 4) is ignored.
        await AssertAsync(200, ("If-None-Match", "\"nope\""), ("If-Modified-Since", lm));
        // A malformed If-None-Match is a true condition, and If-Modified-Since is still ignored (13.1.3).
        await AssertAsync(200, ("If-None-Match", "garbage"), ("If-Modified-Since", lm));
        // A malformed If-Match fails step 1 (13.1.1), whatever If-Unmodified-Since says.
        await AssertAsync(412, ("If-Match", "garbage"), ("If-Unmodified-Since", lm));
        // Step 3 matching wins over an If-Modified-Since that says modified.
        await AssertAsync(304, ("If-None-Match", etag), ("If-Modified-Since", before));
        // Preconditions come before Range (step 5).
        await AssertAsync(304, ("If-None-Match", etag), ("Range", "bytes=0-0"));
        await AssertAsync(412, ("If-Match", "\"nope\""), ("Range", "bytes=0-0"));
        await AssertAsync(304, ("If-Modified-Since", lm), ("Range", "bytes=0-0"));
        await AssertAsync(206, ("If-Match", etag), ("Range", "bytes=0-0"));
        await AssertAsync(416, ("If-Match", etag), ("Range", "bytes=20000-"));

        async Task AssertAsync(int status, params (string Name, string Value)[] headers)
        {
            using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", r =>
            {
                foreach ((string name, string value) in headers)
                {
                    r.Headers.TryAddWithoutValidation(name, value);
                }
            });
            await AssertStatusAsync(response, status);
        }
    }

    [Theory]
    [Transports]
    public async Task Not_modified_carries_validators_but_no_representation_headers(Transport transport)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", r => r.Headers.TryAddWithoutValidation("If-None-Match", ExpectedETag));
        Assert.Equal(HttpStatusCode.NotModified, response.StatusCode);
        Assert.Equal(ExpectedETag, response.Header("ETag"));
        Assert.Equal(ResponseHeaders.HttpDate(ModifiedSeconds), response.Header("Last-Modified"));
        // RFC 9110 15.4.5: a 304 carries no content-describing fields.
        Assert.Null(response.Header("Content-Type"));
        Assert.Null(response.Header("Accept-Ranges"));
        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
    }

    [Theory]
    [Transports]
    public async Task Head_with_a_matching_if_none_match_is_304(Transport transport)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", r => r.Headers.TryAddWithoutValidation("If-None-Match", "W/" + ExpectedETag), HttpMethod.Head);
        Assert.Equal(HttpStatusCode.NotModified, response.StatusCode);
    }

    public static TheoryData<Transport, string, bool> IfRangeCases()
    {
        var data = new TheoryData<Transport, string, bool>();
        foreach (Transport t in TransportMatrix.Default)
        {
            data.Add(t, ExpectedETag, true);
            data.Add(t, "W/" + ExpectedETag, false);
            data.Add(t, "\"nope\"", false);
            data.Add(t, ResponseHeaders.HttpDate(ModifiedSeconds), true);
            data.Add(t, ResponseHeaders.HttpDate(ModifiedSeconds.AddSeconds(-1)), false);
            // RFC 9110 13.1.5: the date must match Last-Modified exactly; a later one is not a match.
            data.Add(t, ResponseHeaders.HttpDate(ModifiedSeconds.AddSeconds(1)), false);
            data.Add(t, "garbage", false);
            data.Add(t, ExpectedETag + ", \"other\"", false);
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(IfRangeCases))]
    public async Task If_range_decides_between_206_and_200(Transport transport, string ifRange, bool partial)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", r =>
        {
            r.Headers.TryAddWithoutValidation("Range", "bytes=10-19");
            r.Headers.TryAddWithoutValidation("If-Range", ifRange);
        });
        byte[] body = await response.Content.ReadAsByteArrayAsync();
        if (partial)
        {
            Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
            Assert.Equal(_content.AsSpan(10, 10).ToArray(), body);
        }
        else
        {
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(_content, body);
        }
    }

    [Theory]
    [Transports]
    public async Task If_range_without_range_is_ignored(Transport transport)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/data.bin", r => r.Headers.TryAddWithoutValidation("If-Range", "\"nope\""));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(_content, await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task A_new_write_within_the_same_second_changes_the_etag_but_not_last_modified()
    {
        _files.Create("sub-second.bin", 100);
        string path = _files.PathOf("sub-second.bin");
        File.SetLastWriteTimeUtc(path, Modified);
        using HttpResponseMessage first = await _host.SendAsync(Transport.Http11, "/sub-second.bin");
        File.SetLastWriteTimeUtc(path, Modified.AddTicks(1));

        // The cache sees the change through a notification or its revalidation interval, so not necessarily by
        // the very next request; within ten seconds is the correctness bound, not a timing claim.
        DateTime deadline = DateTime.UtcNow.AddSeconds(10);
        HttpResponseMessage second;
        while (true)
        {
            second = await _host.SendAsync(Transport.Http11, "/sub-second.bin", r => r.Headers.TryAddWithoutValidation("If-None-Match", first.Header("ETag")));
            if (second.StatusCode != HttpStatusCode.NotModified || DateTime.UtcNow > deadline)
            {
                break;
            }

            second.Dispose();
            await Task.Delay(20);
        }

        using (second)
        {
            Assert.Equal(HttpStatusCode.OK, second.StatusCode);
            Assert.NotEqual(first.Header("ETag"), second.Header("ETag"));
            Assert.Equal(first.Header("Last-Modified"), second.Header("Last-Modified"));
        }
    }

    private async Task AssertStatusAsync(HttpResponseMessage response, int expected)
    {
        Assert.Equal(expected, (int)response.StatusCode);
        byte[] body = await response.Content.ReadAsByteArrayAsync();
        switch (expected)
        {
            case 200:
                Assert.Equal(_content, body);
                break;
            case 206:
                Assert.Equal(_content.AsSpan(0, 1).ToArray(), body);
                break;
            default:
                Assert.Empty(body);
                break;
        }
    }
}
