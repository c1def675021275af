using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Caching;

/// <summary>
/// The per-connection request header cache only remembers what FastFiles parsed: on one keep-alive connection, the
/// same and different header values against different files (other tags, dates and lengths), with Latin-1 bytes and
/// values Kestrel rejects, get byte for byte the responses a server without it gives.
/// </summary>
public sealed class RequestHeaderCacheDifferentialTests : IDisposable
{
    private readonly TestFiles _files = new();

    public RequestHeaderCacheDifferentialTests()
    {
        _files.Create("a.css", 5000);
        _files.Create("b.css", 3000);
        File.SetLastWriteTimeUtc(_files.PathOf("a.css"), new DateTime(2024, 1, 2, 3, 4, 5, DateTimeKind.Utc));
        File.SetLastWriteTimeUtc(_files.PathOf("b.css"), new DateTime(2024, 6, 7, 8, 9, 10, DateTimeKind.Utc));
    }

    public void Dispose() => _files.Dispose();

    private Task<TestHost> StartAsync(bool headerCache) => TestHost.StartAsync(
        app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) }),
        services => services.AddFastFiles(),
        kestrel => kestrel.RequestHeaderEncodingSelector = _ => Encoding.Latin1,
        configureEndpoints: l =>
        {
            if (headerCache)
            {
                l.UseRequestHeaderCache();
            }
        });

    private static async Task<string> TranscriptAsync(TestHost host)
    {
        using Socket socket = await RawHttp.ConnectAsync(host.HttpCopy);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        RawResponse a = await RawHttp.ExchangeAsync(stream, "/a.css", timeout.Token);
        RawResponse b = await RawHttp.ExchangeAsync(stream, "/b.css", timeout.Token);
        string etagA = a.Headers["ETag"], etagB = b.Headers["ETag"];
        string dateA = a.Headers["Last-Modified"], dateB = b.Headers["Last-Modified"];
        string[] headerSets =
        [
            $"If-None-Match: {etagA}\r\n",
            $"If-None-Match: W/{etagA}\r\n",
            $"If-None-Match: \"x\u00e9\", {etagB}\r\n",
            "If-None-Match: *\r\n",
            $"If-None-Match: {etagA}\r\nIf-Modified-Since: {dateB}\r\n",
            $"If-Match: {etagA}\r\n",
            $"If-Range: {etagA}\r\nRange: bytes=0-9\r\n",
            $"If-Range: W/{etagA}\r\nRange: bytes=0-9\r\n",
            $"If-Range: {dateA}\r\nRange: bytes=0-9\r\n",
            $"If-Range: {dateB}\r\nRange: bytes=0-9\r\n",
            "If-Range: \"\u00e9\"\r\nRange: bytes=0-9\r\n",
            "Range: bytes=4000-\r\n",
            "Range: bytes=-100\r\n",
            "Range: bytes=0-9\u00e9\r\n",
            "Range: BYTES=0-9\r\n",
            $"If-Modified-Since: {dateA}\r\n",
            $"If-Modified-Since: {dateB}\r\n",
            $"If-Modified-Since: {dateA.ToLowerInvariant()}\r\n",
            $"If-Modified-Since: {dateA}\u00e9\r\n",
            $"If-Unmodified-Since: {dateA}\r\n",
            $"If-Unmodified-Since: {dateB}\r\n",
            "Accept-Encoding: gzip;q=0.5, br\r\n",
            "Accept-Encoding: \u00e9, gzip\r\n",
        ];

        var lines = new List<string>();
        for (int round = 0; round < 2; round++)
        {
            foreach (string headers in headerSets)
            {
                foreach (string path in new[] { "/a.css", "/b.css", "/a.css" })
                {
                    foreach (string method in new[] { "GET", "HEAD" })
                    {
                        RawResponse response = await RawHttp.ExchangeAsync(stream, path, timeout.Token, method, headers);
                        string fields = string.Join(" | ", response.Headers.Where(h => h.Key != "Date").OrderBy(h => h.Key, StringComparer.Ordinal).Select(h => $"{h.Key}: {h.Value}"));
                        lines.Add($"{method} {path} [{headers.ReplaceLineEndings(" ")}] -> {response.Status} {fields} sha={TestFiles.Sha256(response.Body)}");
                    }
                }
            }
        }

        // Bytes Kestrel refuses in a field value: its own 400, with or without the cache.
        foreach (string bad in new[] { "If-None-Match: \"a\0b\"\r\n", "Range: bytes=0-\0\r\n" })
        {
            RawResponse rejected = await RawHttp.SendAsync(host.HttpCopy, "/a.css", extraHeaders: bad);
            lines.Add($"[{bad.ReplaceLineEndings(" ")}] -> {rejected.Status}");
        }

        return string.Join("\n", lines);
    }

    [Fact]
    public async Task One_connection_gets_the_responses_a_server_without_the_cache_gives()
    {
        string with, without;
        await using (TestHost host = await StartAsync(headerCache: true))
        {
            with = await TranscriptAsync(host);
        }

        await using (TestHost host = await StartAsync(headerCache: false))
        {
            without = await TranscriptAsync(host);
        }

        Assert.Contains("-> 304", with);
        Assert.Contains("-> 206", with);
        Assert.Contains("-> 412", with);
        Assert.Contains("-> 416", with);
        Assert.Contains("-> 400", with);
        Assert.Equal(without, with);
    }

    [Fact]
    public async Task A_rewritten_file_is_not_judged_by_what_the_connection_remembers_of_its_previous_version()
    {
        await using TestHost host = await StartAsync(headerCache: true);
        using Socket socket = await RawHttp.ConnectAsync(host.HttpCopy);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        RawResponse first = await RawHttp.ExchangeAsync(stream, "/a.css", timeout.Token);
        string etag = first.Headers["ETag"], date = first.Headers["Last-Modified"];
        string conditions = $"If-None-Match: {etag}\r\n";
        string ifRangeTag = $"If-Range: {etag}\r\nRange: bytes=0-9\r\n";
        string ifRangeDate = $"If-Range: {date}\r\nRange: bytes=0-9\r\n";
        Assert.Equal(304, (await RawHttp.ExchangeAsync(stream, "/a.css", timeout.Token, extraHeaders: conditions)).Status);
        Assert.Equal(206, (await RawHttp.ExchangeAsync(stream, "/a.css", timeout.Token, extraHeaders: ifRangeTag)).Status);
        Assert.Equal(206, (await RawHttp.ExchangeAsync(stream, "/a.css", timeout.Token, extraHeaders: ifRangeDate)).Status);

        // Same length, other bytes, another second.
        byte[] rewritten = _files.Create("a.css", 5000, seed: 7);
        File.SetLastWriteTimeUtc(_files.PathOf("a.css"), new DateTime(2025, 1, 2, 3, 4, 5, DateTimeKind.Utc));
        RawResponse current;
        do
        {
            current = await RawHttp.ExchangeAsync(stream, "/a.css", timeout.Token);
        }
        while (current.Headers["ETag"] == etag);

        Assert.Equal(rewritten, current.Body);
        RawResponse notMatched = await RawHttp.ExchangeAsync(stream, "/a.css", timeout.Token, extraHeaders: conditions);
        Assert.Equal(200, notMatched.Status);
        Assert.Equal(rewritten, notMatched.Body);
        foreach (string stale in new[] { ifRangeTag, ifRangeDate })
        {
            RawResponse whole = await RawHttp.ExchangeAsync(stream, "/a.css", timeout.Token, extraHeaders: stale);
            Assert.Equal(200, whole.Status);
            Assert.Equal(rewritten, whole.Body);
            Assert.Equal(current.Headers["ETag"], whole.Headers["ETag"]);
            Assert.Equal(current.Headers["Last-Modified"], whole.Headers["Last-Modified"]);
        }
    }

    // Concurrent HTTP/2 streams of one connection share its cache: each gets the answer its own headers call for.
    [Fact]
    public async Task Concurrent_streams_of_one_connection_get_the_answers_of_a_server_without_the_cache()
    {
        (string Path, string Name, string Value, string? Range)[] requests = new (string, string, string, string?)[48];
        string[] paths = ["/a.css", "/b.css"];
        string[] dates = ["Tue, 02 Jan 2024 03:04:05 GMT", "Fri, 07 Jun 2024 08:09:10 GMT", "Sat, 01 Jan 2000 00:00:00 GMT"];
        for (int i = 0; i < requests.Length; i++)
        {
            string path = paths[i % 2];
            string date = dates[(i / 2) % 3];
            requests[i] = ((i / 6) % 4) switch
            {
                0 => (path, "If-Modified-Since", date, null),
                1 => (path, "If-Unmodified-Since", date, null),
                2 => (path, "If-Range", date, $"bytes={i}-{i + 20}"),
                _ => (path, "Accept-Encoding", i % 3 == 0 ? "gzip" : "br;q=0.5, gzip", $"bytes=-{i + 1}"),
            };
        }

        static async Task<string> SendAsync(TestHost host, (string Path, string Name, string Value, string? Range) r)
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.H2c, r.Path, m =>
            {
                m.Headers.TryAddWithoutValidation(r.Name, r.Value);
                if (r.Range is not null)
                {
                    m.Headers.TryAddWithoutValidation("Range", r.Range);
                }
            });
            byte[] body = await response.Content.ReadAsByteArrayAsync();
            return $"{(int)response.StatusCode} {response.Content.Headers.ContentRange} {response.Content.Headers.ContentLength} sha={TestFiles.Sha256(body)}";
        }

        var expected = new string[requests.Length];
        await using (TestHost host = await StartAsync(headerCache: false))
        {
            for (int i = 0; i < requests.Length; i++)
            {
                expected[i] = await SendAsync(host, requests[i]);
            }
        }

        await using (TestHost host = await StartAsync(headerCache: true))
        {
            for (int round = 0; round < 5; round++)
            {
                string[] actual = await Task.WhenAll(requests.Select(r => SendAsync(host, r)));
                Assert.Equal(expected, actual);
            }
        }

        Assert.Contains(expected, e => e.StartsWith("304", StringComparison.Ordinal));
        Assert.Contains(expected, e => e.StartsWith("206", StringComparison.Ordinal));
        Assert.Contains(expected, e => e.StartsWith("412", StringComparison.Ordinal));
    }
}
