using System.Globalization;
using System.Net.Sockets;
using System.Text;
using System.Text.RegularExpressions;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// A seeded mutation fuzzer for the static lane against Kestrel alone: valid GET and HEAD requests for cached files
/// (conditionals, ranges, encodings, Host variants) are changed at the line level (repeated, dropped, reordered
/// fields, letter case, whitespace, obs-fold, body framing, versions, target forms, lines near Kestrel's limits) and at
/// the byte level, sometimes followed by the HTTP/2 preface, then sent over raw connections (plaintext, and some over
/// TLS) to the endpoints with and without the lane, in one write or split at random points, alone or after and before
/// other requests. The response streams must be identical except Date, and the server must close (or keep open) the
/// connection in both. (No case half-closes: Kestrel alone then answers or drops a complete request depending on when
/// it notices the end of input.) The CI run is bounded; set
/// FASTFILES_LANE_FUZZ_CASES (and FASTFILES_LANE_FUZZ_SEED) to hunt with many more cases.
/// </summary>
public sealed class StaticLaneFuzzTests(StaticLaneDifferentialTestsBase.Fixture fixture)
    : StaticLaneFuzzTestsBase(fixture), IClassFixture<StaticLaneDifferentialTestsBase.Fixture>;

/// <summary>
/// The fuzzer against a root with content-hash ETags, the zero-copy send path outside the lane (bodies over the cache's
/// size limit and long cached ones go by sendfile from the lane).
/// </summary>
public sealed class StaticLaneContentHashFuzzTests(StaticLaneContentHashDifferentialTests.ContentHashFixture fixture)
    : StaticLaneFuzzTestsBase(fixture), IClassFixture<StaticLaneContentHashDifferentialTests.ContentHashFixture>;

/// <summary>
/// The fuzzer against small Kestrel request limits, so that mutated requests often fall just under, at or just over one
/// of them (the lane applies them a little stricter and hands the rest to Kestrel).
/// </summary>
public sealed class StaticLaneSmallLimitsFuzzTests(StaticLaneSmallLimitsFuzzTests.SmallLimitsFixture fixture)
    : StaticLaneFuzzTestsBase(fixture), IClassFixture<StaticLaneSmallLimitsFuzzTests.SmallLimitsFixture>
{
    public sealed class SmallLimitsFixture : StaticLaneDifferentialTestsBase.Fixture
    {
        public override Action<KestrelServerOptions>? Kestrel => k =>
        {
            k.Limits.MaxRequestLineSize = 120;
            k.Limits.MaxRequestHeadersTotalSize = 200;
            k.Limits.MaxRequestHeaderCount = 6;
        };
    }
}

/// <summary>The fuzzer against an app with AllowedHosts, which the lane applies as the app's host filtering does.</summary>
public sealed class StaticLaneAllowedHostsFuzzTests(StaticLaneAllowedHostsFuzzTests.AllowedHostsFixture fixture)
    : StaticLaneFuzzTestsBase(fixture), IClassFixture<StaticLaneAllowedHostsFuzzTests.AllowedHostsFixture>
{
    public sealed class AllowedHostsFixture : StaticLaneDifferentialTestsBase.Fixture
    {
        protected override IEnumerable<KeyValuePair<string, string?>>? Settings => [new("AllowedHosts", "localhost;127.0.0.1;*.example.com;EXAMPLE.org")];
    }
}

/// <inheritdoc cref="StaticLaneFuzzTests"/>
public abstract partial class StaticLaneFuzzTestsBase(StaticLaneDifferentialTestsBase.Fixture fixture)
{
    private const string End = "GET /__end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    private const string FollowUp = "GET /one.txt HTTP/1.1\r\nHost: localhost\r\n\r\n";
    private static readonly TimeSpan Quiet = TimeSpan.FromSeconds(1);
    private static readonly TimeSpan SlowQuiet = TimeSpan.FromSeconds(6);
    private readonly StaticLaneDifferentialTestsBase.Fixture _f = fixture;

    /// <summary>One exchange: the request bytes, the writes they are cut into, and what follows them.</summary>
    public sealed record Case(string Request, int[] Splits, bool Pipelined, bool Tls)
    {
        public byte[][] Chunks()
        {
            byte[] bytes = Encoding.Latin1.GetBytes(Request + (Pipelined ? FollowUp : string.Empty) + End);
            var chunks = new List<byte[]>();
            int from = 0;
            foreach (int at in Splits.Where(s => s > 0 && s < bytes.Length).Distinct().Order())
            {
                chunks.Add(bytes[from..at]);
                from = at;
            }

            chunks.Add(bytes[from..]);
            return [.. chunks];
        }

        public override string ToString()
            => $"{Escape(Request)} splits=[{string.Join(",", Splits)}] pipelined={Pipelined} tls={Tls}";
    }

    [Fact]
    public async Task MutatedRequests_AnsweredAsKestrelAloneAnswersThem()
    {
        int count = int.TryParse(Environment.GetEnvironmentVariable("FASTFILES_LANE_FUZZ_CASES"), CultureInfo.InvariantCulture, out int n) ? n : 300;
        int seed = int.TryParse(Environment.GetEnvironmentVariable("FASTFILES_LANE_FUZZ_SEED"), CultureInfo.InvariantCulture, out int s) ? s : 20261127;
        var limits = new KestrelServerOptions();
        _f.Kestrel?.Invoke(limits);
        var generator = new Generator(new Random(seed), _f.ETag, _f.GzETag, limits.Limits);
        List<Case> cases = [.. Enumerable.Range(0, count).Select(_ => generator.Next())];
        (List<string> failures, long appWithout, long appWith) = await CompareAsync(cases);
        Assert.True(failures.Count == 0, $"{failures.Count} of {cases.Count} differ (seed {seed}):\n" + string.Join("\n", failures.Take(8)));

        // Enough mutants stay servable that the lane answers many of them itself.
        Assert.True(appWith + (count / 20) < appWithout, $"the app saw {appWith} requests through the lane, {appWithout} without it");
    }

    // Runs the cases a few at a time; a difference counts only if it stands with a long quiet period too.
    private async Task<(List<string> Failures, long AppWithout, long AppWith)> CompareAsync(IReadOnlyList<Case> cases)
    {
        var failures = new List<string>();
        long appWithout = 0, appWith = 0;
        await Parallel.ForEachAsync(cases, new ParallelOptions { MaxDegreeOfParallelism = 6 }, async (c, _) =>
        {
            byte[][] chunks = c.Chunks();
            Uri without = c.Tls ? _f.Host.Tls : _f.Host.Plain, with = c.Tls ? _f.Host.LaneTls : _f.Host.Lane;
            // The lane never writes a chunked body; the app's echo (of a long path) is cut into chunks where Kestrel's output
            // buffers end, which depends on what was written and flushed before it, and on the zero-copy send path's
            // larger buffers (content-hash fixture, plaintext). Only the chunks' data counts.
            async Task<(string, bool)> Exchange(Uri endpoint, TimeSpan quiet)
            {
                (string response, bool closed) = await ExchangeAsync(endpoint, chunks, quiet);
                return (Chunks().Replace(response, m => string.Concat(m.Groups[2].Captures.Select(d => d.Value))), closed);
            }

            (string expected, bool expectedClosed) = await Exchange(without, Quiet);
            (string actual, bool actualClosed) = await Exchange(with, Quiet);
            if (expected != actual || expectedClosed != actualClosed)
            {
                (expected, expectedClosed) = await Exchange(without, SlowQuiet);
                (actual, actualClosed) = await Exchange(with, SlowQuiet);
            }

            lock (failures)
            {
                if (expected != actual || expectedClosed != actualClosed)
                {
                    // From a little before the first byte that differs.
                    int at = Math.Max(0, expected.AsSpan().CommonPrefixLength(actual) - 200);
                    failures.Add($"--- {c}\n--- without lane (closed: {expectedClosed}, {expected.Length} chars, from {at}):\n{Escape(Head(expected[at..]))}\n"
                        + $"--- with lane (closed: {actualClosed}, {actual.Length} chars, from {at}):\n{Escape(Head(actual[at..]))}");
                }
            }
        });

        // The app's request count per endpoint, from one sequential pass (the parallel one interleaves them).
        foreach (Case c in cases.Take(Math.Min(cases.Count, 150)))
        {
            byte[][] chunks = c.Chunks();
            long before = _f.Host.AppRequests;
            await ExchangeAsync(_f.Host.Plain, chunks, Quiet);
            long middle = _f.Host.AppRequests;
            await ExchangeAsync(_f.Host.Lane, chunks, Quiet);
            appWithout += middle - before;
            appWith += _f.Host.AppRequests - middle;
        }

        return (failures, appWithout * cases.Count / Math.Min(cases.Count, 150), appWith * cases.Count / Math.Min(cases.Count, 150));
    }

    // Sends each chunk as its own write (a pause between them, so the server usually reads them apart) and reads until
    // the server closes (true) or nothing comes for the quiet period (false).
    private static async Task<(string Response, bool Closed)> ExchangeAsync(Uri endpoint, byte[][] chunks, TimeSpan quiet)
    {
        (Socket socket, Stream stream) = await LaneHost.ConnectAsync(endpoint);
        using Socket owned = socket;
        await using Stream _ = stream;
        var received = new MemoryStream();
        Task<bool> reading = ReadAsync(stream, received, quiet);
        try
        {
            for (int i = 0; i < chunks.Length; i++)
            {
                await stream.WriteAsync(chunks[i]);
                await stream.FlushAsync();
                if (i + 1 < chunks.Length)
                {
                    await Task.Delay(2);
                }
            }
        }
        catch (IOException)
        {
            // The server closed early (a 400): what it sent is the answer.
        }

        bool closed = await reading;
        return (LaneHost.WithoutDates(received.ToArray()), closed);
    }

    private static async Task<bool> ReadAsync(Stream stream, MemoryStream into, TimeSpan quiet)
    {
        var buffer = new byte[64 * 1024];
        try
        {
            while (true)
            {
                using var timeout = new CancellationTokenSource(quiet);
                int read = await stream.ReadAsync(buffer, timeout.Token);
                if (read == 0)
                {
                    return true;
                }

                into.Write(buffer, 0, read);
            }
        }
        catch (IOException)
        {
            // A reset is a close.
            return true;
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }

    [GeneratedRegex("(?<=\r\n\r\n)(?:([0-9a-f]{1,6})\r\n([^\r\n]*)\r\n)+(?=0\r\n\r\n)")]
    private static partial Regex Chunks();

    private static string Head(string s) => s.Length > 700 ? s[..700] + "..." : s;

    private static string Escape(string s)
        => (s.Length > 400 ? s[..200] + $"...({s.Length} chars)..." + s[^150..] : s).Replace("\r", "\\r").Replace("\n", "\\n").Replace("\0", "\\0").Replace("\t", "\\t");

    /// <summary>Builds valid requests and mutates them; deterministic for a seed.</summary>
    private sealed class Generator(Random random, string etag, string gzETag, KestrelServerLimits limits)
    {
        private static readonly string[] Files =
        [
            "/data.txt", "/one.txt", "/empty.txt", "/page.js", "/dir/inner.txt", "/", "/dir/", "/mid.bin", "/a+b@c.txt", "/app.3f2a9c1b.js",
            "/UPPER.TXT", "/noext", "/index.html", "/missing.txt", "/big.bin", "/p!$&'()*,;=:@~_.txt",
        ];

        private static readonly string[] Hosts = ["localhost", "localhost:5000", "LOCALHOST", "127.0.0.1", "example.com", "a-b.c", "x", "[::1]", "localhost:", "", "localhost:99999", "-", "a..b", "sub.example.com", "example.com", "a.b.EXAMPLE.COM:8080", ".example.com", "example.org", "EXAMPLE.ORG:1", "localhost.", "127.0.0.1:80", "xexample.com"];

        private static readonly byte[] Alphabet =
        [
            (byte)' ', (byte)'\t', (byte)'\r', (byte)'\n', 0, (byte)':', (byte)'%', (byte)'/', (byte)'\\', (byte)'?', (byte)'#', (byte)'.', 0x7F, 0x80,
            0xC3, 0xFF, (byte)',', (byte)';', (byte)'"', (byte)'=', (byte)'-', (byte)'0', (byte)'a', (byte)'Z', 0x0B, 0x0C, 0x01, (byte)'@', (byte)'*',
        ];

        private string[] Optional() =>
        [
            $"If-None-Match: {etag}",
            $"If-None-Match: W/{etag}",
            $"If-None-Match: \"x\", {etag}",
            $"If-None-Match: {gzETag}",
            "If-None-Match: *",
            "If-None-Match: \"x\"",
            "If-Modified-Since: Fri, 04 Mar 2022 05:06:07 GMT",
            "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT",
            "If-Modified-Since: Fri, 04 Mar 2022 05:06:06 GMT",
            "If-Modified-Since: Sunday, 06-Nov-94 08:49:37 GMT",
            "If-Modified-Since: Sun Nov  6 08:49:37 1994",
            "If-Modified-Since: fri, 04 mar 2022 05:06:07 gmt",
            "If-Modified-Since:  Fri, 04 Mar 2022 05:06:07 GMT ",
            "If-Modified-Since: Fri, 4 Mar 2022 05:06:07 GMT",
            "If-Modified-Since: Fri, 04 Mar 2022 05:06:07 UTC",
            "If-Modified-Since: Mon, 04 Mar 2022 05:06:07 GMT",
            "Range: bytes=0-9",
            "Range: bytes=-5",
            "Range: bytes=5-",
            "Range: bytes=0-0",
            "Range: bytes=99999999-",
            "Range: bytes= 1-2",
            "Range: bytes=1-2 ",
            "Range: Bytes=1-2",
            "Range: bytes=2-1",
            "Range: bytes=-0",
            "Range: bytes=0-1,3-4",
            "Range: bytes=",
            "Range: bytes=01-02",
            "Range: bytes=1-2;x",
            $"If-Range: {etag}",
            "Accept-Encoding: gzip",
            "Accept-Encoding: br, gzip",
            "Accept-Encoding: gzip;q=0, br;q=0.5",
            "Accept-Encoding: GZIP",
            "Accept-Encoding: *",
            "Accept-Encoding: identity;q=0",
            "Accept-Encoding: br;q=1.0001",
            "Accept-Encoding: gzip ;q=1",
            "Connection: keep-alive",
            "Connection: close",
            "Connection: Close",
            "Connection: keep-alive, close",
            "Connection: te",
            "User-Agent: fuzz/1.0",
            "Accept: */*",
            "Cookie: a=b; c=d",
            "X-Custom: a:b/c\\d",
            "X-!#$%&'*+.^_`|~: v",
            "Cache-Control: no-cache",
            "Pragma: no-cache",
            "Referer: http://localhost/",
            "Max-Forwards: 0",
        ];

        private static readonly string[] Framing =
        [
            "Content-Length: 0",
            "Content-Length: 5\r\n\r\nhello",
            "Content-Length: 00",
            "Content-Length: +0",
            "Content-Length: 0, 0",
            "Content-Length: 4\r\nTransfer-Encoding: chunked",
            "Transfer-Encoding: chunked\r\n\r\n0\r\n",
            "Transfer-Encoding: chunked\r\nContent-Length: 30",
            "Transfer-Encoding: gzip, chunked",
            "Transfer-Encoding: identity",
            "Transfer-Encoding:  chunked",
            "Transfer-Encoding: chunked, identity",
            "Expect: 100-continue",
            "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA",
            "TE: trailers",
        ];

        public Case Next()
        {
            string request = Request();

            // Two or three requests in one exchange, each mutated.
            for (int more = random.Next(4) == 0 ? 1 + random.Next(2) : 0; more > 0; more--)
            {
                // Now and then the HTTP/2 preface after a request: Kestrel answers it by whether it is the connection's
                // first request, and the lane may have answered the one before.
                request += random.Next(12) == 0 ? StaticLaneDifferentialTestsBase.Preface : Request();
            }

            int[] splits = random.Next(2) == 0 ? [] : [.. Enumerable.Range(0, 1 + random.Next(3)).Select(_ => 1 + random.Next(Math.Max(1, request.Length + 20)))];
            return new Case(request, splits, Pipelined: random.Next(3) == 0, Tls: random.Next(5) == 0);
        }

        private string Request()
        {
            string method = random.Next(5) == 0 ? "HEAD" : "GET";
            string target = Files[random.Next(Files.Length)];
            string version = "HTTP/1.1";
            var headers = new List<string>();
            if (random.Next(12) != 0)
            {
                headers.Add("Host: " + (random.Next(3) == 0 ? Hosts[random.Next(Hosts.Length)] : "localhost"));
            }

            string[] optional = Optional();
            for (int i = random.Next(4); i > 0; i--)
            {
                headers.Insert(random.Next(headers.Count + 1), optional[random.Next(optional.Length)]);
            }

            string body = string.Empty;
            int lineEndings = 0;
            for (int i = random.Next(4); i > 0; i--)
            {
                switch (random.Next(22))
                {
                    case 0 or 1 or 2:
                        if (headers.Count > 0)
                        {
                            int at = random.Next(headers.Count);
                            headers.Insert(random.Next(headers.Count + 1), headers[at]);
                        }

                        break;
                    case 3 or 4:
                        if (headers.Count > 0)
                        {
                            headers.RemoveAt(random.Next(headers.Count));
                        }

                        break;
                    case 5:
                        if (headers.Count > 1)
                        {
                            int a = random.Next(headers.Count), b = random.Next(headers.Count);
                            (headers[a], headers[b]) = (headers[b], headers[a]);
                        }

                        break;
                    case 6 or 7:
                        if (headers.Count > 0)
                        {
                            int at = random.Next(headers.Count);
                            string line = headers[at];
                            int colon = Math.Max(0, line.IndexOf(':', StringComparison.Ordinal));
                            string name = line[..colon];
                            name = random.Next(3) switch
                            {
                                0 => name.ToUpperInvariant(),
                                1 => name.ToLowerInvariant(),
                                _ => new string([.. name.Select(c => random.Next(2) == 0 ? char.ToUpperInvariant(c) : char.ToLowerInvariant(c))]),
                            };
                            headers[at] = name + line[colon..];
                        }

                        break;
                    case 8:
                        if (headers.Count > 0)
                        {
                            // Whitespace around a value, or before the colon.
                            int at = random.Next(headers.Count);
                            string[] ws = [" ", "\t", " \t ", "\t\t", "\u000b", "\u00a0"];
                            string w = ws[random.Next(ws.Length)];
                            int colon = headers[at].IndexOf(':', StringComparison.Ordinal);
                            headers[at] = random.Next(3) switch
                            {
                                0 => headers[at] + w,
                                1 when colon > 0 => headers[at].Insert(colon, w),
                                _ when colon > 0 => headers[at].Insert(colon + 1, w),
                                _ => w + headers[at],
                            };
                        }

                        break;
                    case 9:
                        // obs-fold, an empty name or value, a line without a colon.
                        string[] odd = [" folded", "\tfolded", ": empty-name", "X-Empty:", "X-Empty: ", "NoColon", "X-A: b\r\n c", ":", " Host: localhost", "Host:localhost"];
                        headers.Insert(random.Next(headers.Count + 1), odd[random.Next(odd.Length)]);
                        break;
                    case 10 or 11:
                        headers.Insert(random.Next(headers.Count + 1), Framing[random.Next(Framing.Length)]);
                        if (random.Next(3) == 0)
                        {
                            body = random.Next(2) == 0 ? "0\r\n\r\n" : "hello";
                        }

                        break;
                    case 12:
                        string[] versions = ["HTTP/1.0", "HTTP/1.2", "HTTP/2.0", "http/1.1", "HTTP/1.1 ", "HTTP/1", "HTTP/1.10", "HTTP/01.1", "HTTP/1.1\tx", "HTTP/11", " HTTP/1.1", "HTTP/3"];
                        version = versions[random.Next(versions.Length)];
                        break;
                    case 13 or 14:
                        string[] targets =
                        [
                            "http://localhost" + target, "http://localhost:80" + target, "HTTP://LOCALHOST" + target, "https://localhost" + target, "http://x" + target,
                            target + "?", target + "?a=b", target + "#f", target + "?#", target + "%20", target.Replace("/", "//", StringComparison.Ordinal),
                            "/." + target, "/x/.." + target, target.Replace('/', '\\'), "localhost:80", "*", target + "/", target + ";p", target + ":", "/%2e" + target,
                            target.ToUpperInvariant(), target + "\t", target + " x", " " + target, "", "//localhost" + target, target + "@", target + "%",
                        ];
                        target = targets[random.Next(targets.Length)];
                        break;
                    case 17 or 18:
                        if (headers.Count > 0)
                        {
                            // One byte of a value: the lane evaluates some values itself (conditionals, ranges, codings).
                            int at = random.Next(headers.Count);
                            int colon = headers[at].IndexOf(':', StringComparison.Ordinal) + 1;
                            if (colon > 0 && colon < headers[at].Length)
                            {
                                const string valueBytes = "\"W/*, \t=-;q.0123456789abgzipbrGMTbytes";
                                int where = colon + random.Next(headers[at].Length - colon);
                                char b = valueBytes[random.Next(valueBytes.Length)];
                                headers[at] = random.Next(3) switch
                                {
                                    0 => headers[at].Insert(where, b.ToString()),
                                    1 => headers[at].Remove(where, 1),
                                    _ => headers[at].Remove(where, 1).Insert(where, b.ToString()),
                                };
                            }
                        }

                        break;
                    case 15:
                        string[] methods = ["get", "Get", "GET\t", "GET ", "HEAD", "POST", "OPTIONS", "G", "GETS", "HEAD\u0000", "CONNECT", "TRACE", "PUT"];
                        method = methods[random.Next(methods.Length)];
                        break;
                    case 16:
                        // Lines near Kestrel's limits: the header section (32 KiB), the request line (8 KiB), the lane's path (1 KiB).
                        switch (random.Next(4))
                        {
                            case 0:
                                int total = limits.MaxRequestHeadersTotalSize - 2 - headers.Sum(h => h.Length + 2) - "X-Pad: ".Length - 2 + random.Next(-6, 7);
                                headers.Add("X-Pad: " + new string('p', Math.Max(1, total)));
                                break;
                            case 1:
                                int line = limits.MaxRequestLineSize - method.Length - version.Length - 4 - target.Length + random.Next(-6, 7);
                                target = "/" + new string('a', Math.Max(1, line - 1)) + target;
                                break;
                            case 2:
                                target = "/" + new string('d', Math.Max(1, 1024 - target.Length - 1 + random.Next(-3, 4))) + target;
                                break;
                            default:
                                int have = headers.Count;
                                for (int h = 0; h < limits.MaxRequestHeaderCount - 3 - have + random.Next(0, 6); h++)
                                {
                                    headers.Add($"X-H{h}: v");
                                }

                                break;
                        }

                        break;
                    default:
                        lineEndings++;
                        break;
                }
            }

            string request = $"{method} {target} {version}\r\n" + string.Concat(headers.Select(h => h + "\r\n")) + "\r\n" + body;
            for (; lineEndings > 0; lineEndings--)
            {
                // One line's CRLF becomes a bare LF, a bare CR, or something near CRLF.
                string[] endings = ["\n", "\r", "\r\r\n", "\n\r", " \r\n", "\r\n ", "\r\0\n"];
                int[] at = [.. Enumerable.Range(0, request.Length - 1).Where(i => request[i] == '\r' && request[i + 1] == '\n')];
                if (at.Length == 0)
                {
                    // Every CRLF of a short request is already gone.
                    break;
                }

                int pick = at[random.Next(at.Length)];
                request = request[..pick] + endings[random.Next(endings.Length)] + request[(pick + 2)..];
            }

            for (int i = random.Next(4) - 1; i > 0; i--)
            {
                request = MutateByte(request);
            }

            return request;
        }

        private string MutateByte(string request)
        {
            int at = random.Next(Math.Max(1, request.Length - 2));
            string any = ((char)Alphabet[random.Next(Alphabet.Length)]).ToString();
            return random.Next(4) switch
            {
                0 => request.Insert(at, any),
                1 => request.Remove(at, 1).Insert(at, any),
                2 => request.Remove(at, 1),
                _ => request.Remove(at, 1).Insert(at, char.IsUpper(request[at]) ? char.ToLowerInvariant(request[at]).ToString() : char.ToUpperInvariant(request[at]).ToString()),
            };
        }
    }
}
