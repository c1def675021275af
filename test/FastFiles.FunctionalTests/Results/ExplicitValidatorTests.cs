using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Net.Http.Headers;

namespace FastFiles.FunctionalTests.Results;

/// <summary>
/// Results with the validators an application chose (<c>lastModified</c>, <c>entityTag</c>) answer every condition as
/// the stock <c>Results.File</c> with the same arguments: the same status, validators, range and bytes. A weak tag
/// matches If-None-Match only (RFC 9110 8.8.3.2).
/// </summary>
public sealed class ExplicitValidatorTests(ExplicitValidatorTests.Fixture fixture) : IClassFixture<ExplicitValidatorTests.Fixture>
{
    // Sub-second part on purpose: Last-Modified and date conditions work to the second.
    private static readonly DateTimeOffset Modified = new(2024, 1, 2, 3, 4, 5, 678, TimeSpan.Zero);
    private static readonly string ModifiedText = HeaderUtilities.FormatDate(Modified);
    private static readonly string Earlier = HeaderUtilities.FormatDate(Modified.AddHours(-1));
    private static readonly string Later = HeaderUtilities.FormatDate(Modified.AddHours(1));

    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public byte[] Content { get; private set; } = [];

        /// <summary>About when y2300.txt got its time (its inode's change time).</summary>
        public DateTime FutureDated { get; private set; }

        protected override async Task<TestHost> StartHostAsync()
        {
            // A compressible type, so the rooted result with compression and content hashes on must still send the
            // file's own bytes with the application's validators.
            Content = Enumerable.Range(0, 8_000).Select(i => (byte)('a' + (i % 23))).ToArray();
            Files.Write("data.css", Content);
            string root = Files.Root;
            string path = Files.PathOf("data.css");

            // Dated in the future; opened afresh for every response by a result without a root.
            Files.Write("y2300.txt", "y2300"u8.ToArray());
            File.SetLastWriteTimeUtc(Files.PathOf("y2300.txt"), new DateTime(2300, 1, 1, 0, 0, 0, DateTimeKind.Utc));
            string future = Files.PathOf("y2300.txt");
            FutureDated = DateTime.UtcNow;
            return await TestHost.StartAsync(app =>
            {
                app.MapGet("/stock/{tag}", (string tag) => Microsoft.AspNetCore.Http.Results.File(path, "text/css", null, Modified, Tag(tag), enableRangeProcessing: true));
                app.MapGet("/fast/{tag}", (string tag) => FastResults.PhysicalFile(path, "text/css", null, Modified, Tag(tag)));
                // Named arguments, as Results.File takes them.
                app.MapGet("/dated", () => FastResults.PhysicalFile(path, lastModified: Modified));
                app.MapGet("/tagged", () => FastResults.PhysicalFile(path, "text/css", entityTag: new EntityTagHeaderValue("\"t\"")));
                app.MapGet("/y2300", () => FastResults.PhysicalFile(future));
                app.MapGet("/future", () => FastResults.PhysicalFile(path, lastModified: DateTimeOffset.UtcNow.AddDays(1)));
                app.MapGet("/rooted/{tag}", (string tag) => FastResults.File(
                    root, "data.css", "text/css", enableDynamicCompression: true, enableContentHashETags: true, lastModified: Modified, entityTag: Tag(tag)));
            });
        }
    }

    private static EntityTagHeaderValue? Tag(string kind) => kind switch
    {
        "strong" => new EntityTagHeaderValue("\"v1\""),
        "weak" => new EntityTagHeaderValue("\"v1\"", isWeak: true),
        _ => null,
    };

    public static TheoryData<Transport, string, string> Cases()
    {
        string[] conditions =
        [
            "",
            "If-None-Match: \"v1\"", "If-None-Match: W/\"v1\"", "If-None-Match: \"other\"", "If-None-Match: *",
            "If-Match: \"v1\"", "If-Match: W/\"v1\"", "If-Match: \"other\"", "If-Match: *",
            $"If-Modified-Since: {ModifiedText}", $"If-Modified-Since: {Earlier}",
            $"If-Unmodified-Since: {ModifiedText}", $"If-Unmodified-Since: {Earlier}",
            "Range: bytes=10-19",
            "Range: bytes=10-19|If-Range: \"v1\"", "Range: bytes=10-19|If-Range: W/\"v1\"", "Range: bytes=10-19|If-Range: \"other\"",
            $"Range: bytes=10-19|If-Range: {ModifiedText}", $"Range: bytes=10-19|If-Range: {Earlier}",
        ];
        var data = new TheoryData<Transport, string, string>();
        foreach (Transport transport in TransportMatrix.Default)
        {
            foreach (string tag in new[] { "strong", "weak", "none" })
            {
                foreach (string condition in conditions)
                {
                    data.Add(transport, tag, condition);
                }
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Cases))]
    public async Task Conditions_are_answered_as_RFC_9110_and_Results_File_answer_them(Transport transport, string tag, string condition)
    {
        HttpStatusCode expected = Expected(tag, condition);
        Answer stock = await SendAsync(transport, $"/stock/{tag}", condition);
        foreach (string endpoint in new[] { "fast", "rooted" })
        {
            Answer fast = await SendAsync(transport, $"/{endpoint}/{tag}", condition);
            Assert.Equal(expected, fast.Status);
            // A 412 carries no validators, as from UseStaticFiles (Results.File sends them; RFC 9110 15.5.13 asks neither).
            bool failed = expected == HttpStatusCode.PreconditionFailed;
            Assert.Equal(failed ? null : ModifiedText, fast.LastModified);
            Assert.Null(fast.ContentEncoding);
            Assert.Equal(
                expected switch
                {
                    HttpStatusCode.OK => _f.Content,
                    HttpStatusCode.PartialContent => _f.Content[10..20],
                    _ => [],
                },
                fast.Body);
            Assert.Equal(expected == HttpStatusCode.PartialContent ? $"bytes 10-19/{_f.Content.Length}" : null, fast.ContentRange);
            if (failed)
            {
                Assert.Null(fast.ETag);
            }
            else if (tag == "none")
            {
                // FastFiles' own strong tag (the stock result sends none).
                Assert.StartsWith("\"", fast.ETag, StringComparison.Ordinal);
            }
            else
            {
                Assert.Equal(tag == "strong" ? "\"v1\"" : "W/\"v1\"", fast.ETag);
            }

            // The stock result answers the same, except where it has no tag to compare (FastFiles has its own; the stock
            // result also ignores If-Match, If-Range and "*" without one).
            if (tag != "none" || !(condition.Contains('"') || condition.Contains('*')))
            {
                Assert.Equal(stock.Status, fast.Status);
                Assert.Equal(stock.ContentRange, fast.ContentRange);
                Assert.Equal(stock.Body, fast.Body);
                if (!failed)
                {
                    Assert.Equal(stock.LastModified, fast.LastModified);
                    Assert.Equal(stock.ETag ?? fast.ETag, fast.ETag);
                }
            }
        }
    }

    [Theory]
    [Transports]
    public async Task A_date_If_Range_must_equal_Last_Modified(Transport transport)
    {
        // RFC 9110 13.1.5: a date validator matches only the exact Last-Modified, so a later date sends the whole file.
        Answer answer = await SendAsync(transport, "/fast/strong", $"Range: bytes=10-19|If-Range: {Later}");
        Assert.Equal(HttpStatusCode.OK, answer.Status);
        Assert.Equal(_f.Content, answer.Body);
    }

    [Theory]
    [Transports]
    public async Task Named_arguments_set_one_validator_each(Transport transport)
    {
        Answer dated = await SendAsync(transport, "/dated", string.Empty);
        Assert.Equal(ModifiedText, dated.LastModified);
        Assert.StartsWith("\"", dated.ETag, StringComparison.Ordinal);
        Answer tagged = await SendAsync(transport, "/tagged", "If-None-Match: \"t\"");
        Assert.Equal(HttpStatusCode.NotModified, tagged.Status);
        Assert.Equal("\"t\"", tagged.ETag);
    }

    [Theory]
    [Transports]
    public async Task A_Last_Modified_in_the_future_is_never_later_than_Date(Transport transport)
    {
        // RFC 9110 8.8.2.1: replaced by the response's time; revalidating with what was sent is then a 304.
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/future");
        DateTimeOffset lastModified = response.Content.Headers.LastModified!.Value;
        Assert.True(lastModified <= response.Headers.Date!.Value, $"Last-Modified {lastModified:R} is after Date {response.Headers.Date:R}");
        Answer revalidated = await SendAsync(transport, "/future", $"If-Modified-Since: {HeaderUtilities.FormatDate(lastModified)}");
        Assert.Equal(HttpStatusCode.NotModified, revalidated.Status);
    }

    [Theory]
    [Transports]
    public async Task A_file_dated_in_the_future_gets_one_Last_Modified_no_later_than_Date(Transport transport)
    {
        // Opened afresh per response: each must send the same time (the inode's change time, once that is a second
        // old), so revalidation by date works (RFC 9110 8.8.2.1, 13.1.3).
        TimeSpan settled = _f.FutureDated.AddSeconds(1.5) - DateTime.UtcNow;
        if (settled > TimeSpan.Zero)
        {
            await Task.Delay(settled);
        }

        using HttpResponseMessage first = await _f.Host.SendAsync(transport, "/y2300");
        DateTimeOffset lastModified = first.Content.Headers.LastModified!.Value;
        Assert.InRange(lastModified, DateTimeOffset.UtcNow.AddMinutes(-5), first.Headers.Date!.Value);
        // A second later: a time taken from the clock per response would have moved on.
        await Task.Delay(1100);
        using HttpResponseMessage second = await _f.Host.SendAsync(transport, "/y2300");
        Assert.Equal(first.Header("Last-Modified"), second.Header("Last-Modified"));
        Answer revalidated = await SendAsync(transport, "/y2300", $"If-Modified-Since: {first.Header("Last-Modified")}");
        Assert.Equal(HttpStatusCode.NotModified, revalidated.Status);
    }

    [Fact]
    public void A_tag_no_request_could_name_is_refused()
    {
        // EntityTagHeaderValue takes "a\"b" as a quoted-string, but an entity-tag has no DQUOTE (RFC 9110 8.8.3): sent,
        // no If-None-Match or If-Match could ever name it.
        var escaped = new EntityTagHeaderValue("\"a\\\"b\"");
        Assert.Throws<ArgumentException>(() => FastResults.PhysicalFile("/x", entityTag: escaped));
        Assert.Throws<ArgumentException>(() => FastResults.File("/", "x", entityTag: escaped));
        Assert.Throws<ArgumentException>(() => FastResults.PhysicalFile("/x", entityTag: EntityTagHeaderValue.Any));
        Assert.Equal("W/\"a\\b\"", FastResults.PhysicalFile("/x", entityTag: new EntityTagHeaderValue("\"a\\b\"", isWeak: true)).EntityTag!.ToString());
    }

    // What RFC 9110 13.2.2 and 13.1.5 give for this representation (Last-Modified = Modified, ETag per tag).
    private static HttpStatusCode Expected(string tag, string condition)
    {
        bool strong = tag == "strong";
        bool hasTag = tag != "none";
        return condition switch
        {
            "If-None-Match: \"v1\"" or "If-None-Match: W/\"v1\"" => hasTag ? HttpStatusCode.NotModified : HttpStatusCode.OK,
            "If-None-Match: *" => HttpStatusCode.NotModified,
            "If-Match: \"v1\"" => strong ? HttpStatusCode.OK : HttpStatusCode.PreconditionFailed,
            "If-Match: W/\"v1\"" or "If-Match: \"other\"" => HttpStatusCode.PreconditionFailed,
            _ when condition == $"If-Modified-Since: {ModifiedText}" => HttpStatusCode.NotModified,
            _ when condition == $"If-Unmodified-Since: {Earlier}" => HttpStatusCode.PreconditionFailed,
            "Range: bytes=10-19" => HttpStatusCode.PartialContent,
            "Range: bytes=10-19|If-Range: \"v1\"" => strong ? HttpStatusCode.PartialContent : HttpStatusCode.OK,
            _ when condition == $"Range: bytes=10-19|If-Range: {ModifiedText}" => HttpStatusCode.PartialContent,
            _ => HttpStatusCode.OK,
        };
    }

    private async Task<Answer> SendAsync(Transport transport, string path, string condition)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, path, r =>
        {
            r.Headers.TryAddWithoutValidation("Accept-Encoding", "br, gzip");
            foreach (string field in condition.Split('|', StringSplitOptions.RemoveEmptyEntries))
            {
                string[] parts = field.Split(": ", 2);
                r.Headers.TryAddWithoutValidation(parts[0], parts[1]);
            }
        });
        return new Answer(
            response.StatusCode,
            response.Header("ETag"),
            response.Header("Last-Modified"),
            response.Header("Content-Range"),
            response.Header("Content-Encoding"),
            await response.Content.ReadAsByteArrayAsync());
    }

    private sealed record Answer(HttpStatusCode Status, string? ETag, string? LastModified, string? ContentRange, string? ContentEncoding, byte[] Body);
}
