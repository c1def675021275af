using System.Security.Cryptography;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using FastFiles.Caching;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>The differential corpus against a root with modification-time ETags.</summary>
public sealed class StaticLaneDifferentialTests(StaticLaneDifferentialTestsBase.Fixture fixture)
    : StaticLaneDifferentialTestsBase(fixture), IClassFixture<StaticLaneDifferentialTestsBase.Fixture>;

/// <summary>
/// The differential corpus with one options object for the app and both lanes, as the sample wires them: the lanes and
/// <c>UseFastFiles</c> share one file cache, so each answers from entries the other built (in any order the corpus
/// reaches them), with the send path outside the plaintext lane. An entry built wrongly would look the same on both sides
/// here, so the classes with a cache of the lane's own stay the reference for how entries are built.
/// </summary>
public sealed class StaticLaneSharedCacheDifferentialTests(StaticLaneSharedCacheDifferentialTests.SharedCacheFixture fixture)
    : StaticLaneDifferentialTestsBase(fixture), IClassFixture<StaticLaneSharedCacheDifferentialTests.SharedCacheFixture>
{
    public sealed class SharedCacheFixture : Fixture
    {
        protected override bool ShareCache => true;

        protected override Action<ListenOptions>? PlainLane => l => l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.Zero);
    }

    [Fact]
    public void TheAppAndTheLanesHoldOneCache()
        => Assert.Single(Shared.Host.Services.GetRequiredService<IOptions<SharedFileCaches>>().Value.Held());
}

/// <summary>
/// The differential corpus against a root with <c>EnableContentHashETags</c>: the lane's prebuilt responses carry the
/// content-hash tags the middleware sends, and a large file (hashed in the background) is answered as the middleware does.
/// On the plaintext lane endpoint the zero-copy send path sits outside the lane, so the lane also sends the large file's
/// body itself (by sendfile) under its content-hash tag.
/// </summary>
public sealed class StaticLaneContentHashDifferentialTests(StaticLaneContentHashDifferentialTests.ContentHashFixture fixture)
    : StaticLaneDifferentialTestsBase(fixture), IClassFixture<StaticLaneContentHashDifferentialTests.ContentHashFixture>
{
    public sealed class ContentHashFixture : Fixture
    {
        protected override FastStaticFileOptions FilesFor(string root)
        {
            FastStaticFileOptions options = base.FilesFor(root);
            options.EnableContentHashETags = true;
            return options;
        }

        // The files are written just before the host starts: no RecentWriteWindow, or the lane would hand them to Kestrel.
        protected override Action<ListenOptions>? PlainLane => l => l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.Zero);
    }

    [Fact]
    public void TheCorpusUsesContentHashTags()
    {
        // 128 bits of SHA-256 in base64url, quoted: the tag the corpus's conditionals are built from.
        Assert.Matches("^\"[A-Za-z0-9_-]{22}\"$", Shared.ETag);
        Assert.Matches("^\"[A-Za-z0-9_-]{22}\"$", Shared.GzETag);
    }

    [Fact]
    public async Task TheLaneSendsALargeFileUnderItsContentHashTag()
    {
        byte[] file = File.ReadAllBytes(Shared.Files.PathOf("big.bin"));
        string expected = "\"" + Convert.ToBase64String(SHA256.HashData(file).AsSpan(0, 16)).TrimEnd('=').Replace('+', '-').Replace('/', '_') + "\"";
        long before = Shared.Host.AppRequests;
        string response = Encoding.Latin1.GetString(await LaneHost.ExchangeAsync(Shared.Host.Lane, [Encoding.ASCII.GetBytes(
            "GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n" + $"GET /big.bin HTTP/1.1\r\nHost: localhost\r\nIf-None-Match: {expected}\r\nConnection: close\r\n\r\n")]));

        Assert.Equal(before, Shared.Host.AppRequests);
        Assert.StartsWith("HTTP/1.1 200 OK\r\n", response, StringComparison.Ordinal);
        Assert.Contains($"\r\nETag: {expected}\r\n", response, StringComparison.Ordinal);
        int notModified = response.IndexOf("HTTP/1.1 304 Not Modified\r\n", StringComparison.Ordinal);
        Assert.True(notModified > 0, "the conditional request was not answered 304");
        Assert.Equal(file, Encoding.Latin1.GetBytes(response[(response.IndexOf("\r\n\r\n", StringComparison.Ordinal) + 4)..notModified]));
    }
}

/// <summary>
/// The static lane's equivalence: one corpus of raw requests (conditionals, ranges, encodings, odd and hostile paths,
/// request smuggling and desync attempts, pipelined bursts) sent to the same app with and without the lane, over
/// plaintext and TLS; every response must be byte-identical except Date. Some exchanges are also split at every byte.
/// </summary>
public abstract class StaticLaneDifferentialTestsBase(StaticLaneDifferentialTestsBase.Fixture fixture)
{
    private const string End = "GET /__end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    private static readonly DateTime Modified = new DateTime(2022, 3, 4, 5, 6, 7, DateTimeKind.Utc).AddTicks(7_654_321);
    private readonly Fixture _f = fixture;

    protected Fixture Shared => _f;

    public class Fixture : IAsyncLifetime
    {
        public TestFiles Files { get; } = new();

        public LaneHost Host { get; private set; } = null!;

        public string ETag { get; private set; } = string.Empty;

        public string GzETag { get; private set; } = string.Empty;

        public async Task InitializeAsync()
        {
            foreach ((string name, int length) in new[]
            {
                ("data.txt", 10_000), ("empty.txt", 0), ("one.txt", 1), ("app.3f2a9c1b.js", 300), ("page.js", 2000), ("page.js.gz", 500),
                ("page.js.br", 400), ("dir/inner.txt", 10), ("noext", 10), ("UPPER.TXT", 10), (".hidden.txt", 10), ("big.bin", 100_000),
                ("mid.bin", 40_000),
                ("with space.txt", 10), ("a+b@c.txt", 10), ("p!$&'()*,;=:@~_.txt", 10), ("index.html", 700), ("dir/index.html", 70), ("sub/noindex.txt", 10),
            })
            {
                Files.Create(name, length);
                File.SetLastWriteTimeUtc(Files.PathOf(name), Modified);
            }

            File.SetLastWriteTimeUtc(Files.PathOf("page.js.gz"), Modified.AddSeconds(1));
            File.SetLastWriteTimeUtc(Files.PathOf("page.js.br"), Modified.AddSeconds(1));
            Host = await LaneHost.StartAsync(Files.Root, Kestrel, files: FilesFor, plainLane: PlainLane, settings: Settings, oneOptionsObject: ShareCache);

            // A large file's content hash is computed in the background, by each cache on its own: the corpus starts
            // once both the app and the lane send it, so no response depends on which finished first.
            using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            byte[] head = Encoding.ASCII.GetBytes("HEAD /big.bin HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
            foreach ((Uri endpoint, bool lane) in new[] { (Host.Plain, false), (Host.Tls, false), (Host.Lane, true), (Host.LaneTls, true) })
            {
                while (true)
                {
                    long before = Host.AppRequests;
                    string response = Encoding.Latin1.GetString(await LaneHost.ExchangeAsync(endpoint, [head]));

                    // Through a lane endpoint, only the lane's own answer counts (a hand-off is the app's answer).
                    if (response.Contains("\r\nETag: ", StringComparison.Ordinal) && (!lane || Host.AppRequests == before))
                    {
                        break;
                    }

                    await Task.Delay(20, deadline.Token);
                }
            }

            RawResponse data = await RawHttp.SendAsync(Host.Plain, "/data.txt");
            ETag = data.Headers["ETag"];
            RawResponse gz = await RawHttp.SendAsync(Host.Plain, "/page.js", extraHeaders: "Accept-Encoding: gzip\r\n");
            GzETag = gz.Headers["ETag"];
        }

        // Directories answer with their default file (the lane serves the first name, as UseFastFiles caches it).
        protected virtual FastStaticFileOptions FilesFor(string root)
        {
            FastStaticFileOptions options = LaneHost.FilesFor(root);
            options.DefaultFileNames = ["index.html"];
            return options;
        }

        /// <summary>Connection middlewares outside the lane on its plaintext endpoint; none by default.</summary>
        protected virtual Action<ListenOptions>? PlainLane => null;

        /// <summary>Server options (limits); Kestrel's defaults unless overridden.</summary>
        public virtual Action<KestrelServerOptions>? Kestrel => null;

        /// <summary>Whether the app and the lanes are given one options object (and so share one file cache).</summary>
        protected virtual bool ShareCache => false;

        /// <summary>The app's configuration (AllowedHosts); none unless overridden.</summary>
        protected virtual IEnumerable<KeyValuePair<string, string?>>? Settings => null;

        public async Task DisposeAsync()
        {
            await Host.DisposeAsync();
            await ResponseHeaders.AssertNoOpenFilesUnderAsync(Files.Root);
            Files.Dispose();
        }
    }

    private static string Get(string target, string headers = "", string method = "GET")
        => $"{method} {target} HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n";

    /// <summary>Single requests: each is sent alone, then followed by a closing request for /__end.</summary>
    private List<string> Corpus()
    {
        string etag = _f.ETag;
        string lastModified = new DateTimeOffset(Modified.AddTicks(-(Modified.Ticks % TimeSpan.TicksPerSecond))).ToString("r");
        var corpus = new List<string>();
        string[] files = ["/data.txt", "/empty.txt", "/one.txt", "/app.3f2a9c1b.js", "/page.js", "/dir/inner.txt", "/noext", "/UPPER.TXT", "/big.bin", "/mid.bin", "/a+b@c.txt", "/missing.txt", "/", "/dir/", "/index.html"];
        string[] variants =
        [
            string.Empty,
            $"If-None-Match: {etag}\r\n",
            $"If-None-Match: W/{etag}\r\n",
            $"If-None-Match: \"nope\", {etag}\r\n",
            "If-None-Match: *\r\n",
            "If-None-Match: \"nope\"\r\n",
            "If-None-Match: garbage\r\n",
            $"If-Modified-Since: {lastModified}\r\n",
            "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n",
            "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n",
            "If-Modified-Since: Sunday, 06-Nov-94 08:49:37 GMT\r\n",
            "If-Modified-Since: yesterday\r\n",
            "Range: bytes=0-9\r\n",
            "Range: bytes=-5\r\n",
            "Range: bytes=5-\r\n",
            "Range: bytes=99999999-\r\n",
            "Range: bytes=0-1,3-4\r\n",
            "Range: bytes=x-y\r\n",
            "Range: items=0-1\r\n",
            "Range: bytes=0-0\r\nRange: bytes=1-1\r\n",
            $"Range: bytes=0-9\r\nIf-Range: {etag}\r\n",
            "Accept-Encoding: gzip\r\n",
            "Accept-Encoding: br, gzip\r\n",
            "Accept-Encoding: gzip;q=0, br;q=0.5\r\n",
            "Accept-Encoding: *\r\n",
            "Accept-Encoding: identity\r\n",
            "Accept-Encoding: gzip\r\nRange: bytes=2-4\r\n",
            "Connection: keep-alive\r\n",
            "Connection: close\r\n",
            "Connection: Upgrade\r\nUpgrade: websocket\r\n",
            $"If-Match: {etag}\r\n",
            "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n",
            "Authorization: Basic eDp5\r\n",
            "Cookie: a=b\r\nUser-Agent: test\r\nAccept: */*\r\n",
        ];
        foreach (string file in files)
        {
            foreach (string variant in variants)
            {
                corpus.Add(Get(file, variant));
            }

            corpus.Add(Get(file, method: "HEAD"));
            corpus.Add(Get(file, "Range: bytes=0-3\r\n", method: "HEAD"));
            corpus.Add(Get(file, $"If-None-Match: {etag}\r\n", method: "HEAD"));
        }

        corpus.Add(Get("/page.js", $"If-None-Match: {_f.GzETag}\r\nAccept-Encoding: gzip\r\n"));

        // Odd and hostile targets.
        foreach (string target in new[]
        {
            "/data.txt?x=1", "/data.txt?", "/%64ata.txt", "/data%2Etxt", "/./data.txt", "/dir/../data.txt", "/dir/..%2Fdata.txt", "//data.txt",
            "/dir/", "/dir", "/", "/sub/", "/sub", "/missing/", "/dir/?x=1", "/DIR/", "/DATA.TXT", "/data.txt#frag", "http://localhost/data.txt", "\\data.txt", "/dir\\inner.txt", "/data.txt%00",
            "/.hidden.txt", "/with%20space.txt", "*", "/data.txt/", "/dir//inner.txt", "/dir/./inner.txt", "/%2e%2e/etc/passwd", "/../../etc/passwd",
        })
        {
            corpus.Add(Get(target));
        }

        // Malformed requests and smuggling attempts: whatever Kestrel alone answers.
        corpus.AddRange(
        [
            "GET /data.txt HTTP/1.0\r\nHost: localhost\r\n\r\n",
            "GET /data.txt HTTP/1.0\r\n\r\n",
            "GET /data.txt HTTP/2.0\r\nHost: localhost\r\n\r\n",
            "GET /data.txt HTTP/1.1\nHost: localhost\n\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nX-Folded: a\r\n b\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nX-Nul: a\0b\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nX-Bad : a\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nX(Bad): a\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\n: empty\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nHost: other\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: bad host\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost:99999999\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /one.txt HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nContent-Length: 30\r\n\r\n0\r\n\r\nGET /one.txt HTTP/1.1\r\nX: y\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhelloGET /one.txt HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: xchunked\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding : chunked\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n\r\n",
            "POST /data.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n\r\nabc",
            "get /data.txt HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "GET  /data.txt HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "GET /data.txt  HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "GET /data.txt HTTP/1.1 \r\nHost: localhost\r\n\r\n",
            "\r\nGET /data.txt HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nX-High: caf\u00e9\r\n\r\n",
            "GET /\u00fcn\u00efc\u00f8d\u00e9.txt HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nX-Long: " + new string('a', 40_000) + "\r\n\r\n",
            "GET /" + new string('a', 9_000) + " HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\n" + string.Concat(Enumerable.Range(0, 120).Select(i => $"X-H{i}: v\r\n")) + "\r\n",
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\n" + string.Concat(Enumerable.Range(0, 98).Select(i => $"X-H{i}: v\r\n")) + "\r\n",
            Preface,
            "GET /data.txt HTTP/1.1\r\nHost: localhost\r\nTE: trailers\r\n\r\n",
            "OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "DELETE /data.txt HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ]);
        return corpus;
    }

    /// <summary>Pipelined bursts: several requests in one write, hostile ones in the middle.</summary>
    private List<string> Bursts()
    {
        string etag = _f.ETag;
        return
        [
            Get("/data.txt") + Get("/one.txt") + Get("/page.js", "Accept-Encoding: gzip\r\n") + Get("/data.txt", "Range: bytes=1-2\r\n"),
            Get("/one.txt") + Get("/data.txt", $"If-None-Match: {etag}\r\n") + "POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello" + Get("/one.txt"),
            Get("/one.txt") + Get("/one.txt", method: "HEAD") + "GET /one.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + Get("/data.txt"),
            Get("/one.txt") + Get("/missing") + Get("/one.txt"),
            Get("/one.txt") + Get("/one.txt", "Connection: close\r\n") + Get("/data.txt"),
            Get("/big.bin", "Range: bytes=0-99\r\n") + Get("/one.txt"),

            // A cached body long enough to go by sendfile inside the send path (ZeroCopySendFileOptions.CachedMinimumLength),
            // whole and as ranges on either side of that length, between bodies copied from memory.
            Get("/mid.bin") + Get("/mid.bin", "Range: bytes=100-35000\r\n") + Get("/one.txt") + Get("/mid.bin", "Range: bytes=-33000\r\n")
                + Get("/mid.bin", "Range: bytes=0-20000\r\n") + Get("/mid.bin"),
            Get("/") + Get("/dir/") + Get("/sub/") + Get("/"),
            string.Concat(Enumerable.Repeat(Get("/data.txt"), 40)),
            string.Concat(Enumerable.Repeat(Get("/one.txt"), 16)) + "GET /bare HTTP/1.1\nHost: x\n\n",

            // The HTTP/2 preface after requests the lane answered: Kestrel alone sends GOAWAY only for a connection's
            // first request, so here it answers 505 (plaintext and TLS alike); near misses are other requests.
            Get("/one.txt") + Preface,
            Get("/one.txt", method: "HEAD") + Preface,
            Get("/one.txt") + Get("/data.txt", $"If-None-Match: {_f.ETag}\r\n") + Preface,
            Get("/one.txt") + "PRI * HTTP/2.0\r\n",
            Get("/one.txt") + "PRI * HTTP/2.1\r\n\r\nSM\r\n\r\n",
            Get("/one.txt") + "PRI / HTTP/2.0\r\n\r\nSM\r\n\r\n",
            Get("/one.txt") + "pri * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            Get("/missing") + Preface,
        ];
    }

    /// <summary>
    /// Seeds the lane can answer, each mutated at one byte (inserted, replaced or removed, from bytes that matter to an
    /// HTTP/1.1 parser), at a header line (repeated or dropped) or in letter case: a fixed seed, so a failure repeats.
    /// </summary>
    private List<string> Mutations(int count, int seed)
    {
        string etag = _f.ETag;
        string[] seeds =
        [
            Get("/data.txt"),
            Get("/one.txt", "Accept-Encoding: gzip, br\r\n"),
            Get("/page.js", "Accept-Encoding: gzip;q=0.5, br\r\nRange: bytes=1-20\r\n"),
            Get("/data.txt", $"If-None-Match: {etag}\r\nConnection: keep-alive\r\n"),
            Get("/data.txt", "Range: bytes=5-,-3\r\nIf-Range: " + etag + "\r\n"),
            Get("/dir/inner.txt", "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\nUser-Agent: x\r\n"),
            Get("/dir/", "Cookie: a=b\r\n", method: "HEAD"),
            Get("/mid.bin", "Range: bytes=100-35000\r\n"),
        ];
        byte[] alphabet = [(byte)' ', (byte)'\t', (byte)'\r', (byte)'\n', 0, (byte)':', (byte)'/', (byte)'%', (byte)'.', (byte)'\\', (byte)'?',
            (byte)'#', 0x7F, 0x80, 0xFF, (byte)',', (byte)';', (byte)'"', (byte)'=', (byte)'-', (byte)'0', (byte)'A', 0x0B, 0x0C];
        var random = new Random(seed);
        var cases = new List<string>(count);
        while (cases.Count < count)
        {
            string original = seeds[random.Next(seeds.Length)];
            string mutated = original;
            for (int n = 1 + random.Next(3); n > 0; n--)
            {
                mutated = Mutate(mutated, random, alphabet);
            }

            if (mutated != original)
            {
                cases.Add(mutated);
            }
        }

        return cases;
    }

    private static string Mutate(string request, Random random, byte[] alphabet)
    {
        int at = random.Next(Math.Max(1, request.Length - 2));
        string any = ((char)alphabet[random.Next(alphabet.Length)]).ToString();
        switch (random.Next(6))
        {
            case 0:
                return request.Insert(at, any);
            case 1:
                return request.Remove(at, 1).Insert(at, any);
            case 2:
                return request.Remove(at, 1);
            case 3:
                char c = request[at];
                return request.Remove(at, 1).Insert(at, (char.IsUpper(c) ? char.ToLowerInvariant(c) : char.ToUpperInvariant(c)).ToString());
            default:
                // Repeat or drop one whole line (the request line included).
                List<string> lines = [.. request.TrimEnd('\r', '\n').Split("\r\n")];
                int line = random.Next(lines.Count);
                if (random.Next(2) == 0)
                {
                    lines.Insert(line, lines[line]);
                }
                else
                {
                    lines.RemoveAt(line);
                }

                return string.Join("\r\n", lines) + "\r\n\r\n";
        }
    }

    [Fact]
    public async Task MutatedRequests_AnsweredIdentically()
    {
        // Every other case arrives in two writes, split at a point drawn from the same seed.
        List<string> cases = Mutations(3000, seed: 20261126);
        var split = new Random(cases.Count);
        (long appWithout, long appWith) = await AssertIdenticalAsync("plain", [.. cases.Select((r, i) =>
        {
            int at = 1 + split.Next(r.Length - 1);
            return i % 2 == 0 ? new[] { r + End } : [r[..at], r[at..] + End];
        })]);

        // Many mutations leave a request the lane still answers: the lane was really exercised, not only handing off.
        Assert.True(appWith + 100 < appWithout, $"the app saw {appWith} requests through the lane, {appWithout} without it");
    }

    // The equivalence above holds whoever answers; here the lane must be the one answering directories itself.
    [Fact]
    public async Task Directories_with_a_default_file_are_answered_by_the_lane()
    {
        long before = _f.Host.AppRequests;
        byte[] response = await LaneHost.ExchangeAsync(_f.Host.Lane, [Encoding.ASCII.GetBytes(Get("/") + Get("/dir/", "Accept-Encoding: gzip\r\n") + Get("/", "Connection: close\r\n"))]);
        string text = Encoding.Latin1.GetString(response);
        Assert.Equal(3, text.Split("HTTP/1.1 200 OK\r\n").Length - 1);
        Assert.Equal(before, _f.Host.AppRequests);
    }

    public static TheoryData<string> Endpoints => new() { "plain", "tls" };

    [Theory]
    [MemberData(nameof(Endpoints))]
    public async Task Corpus_AnsweredIdenticallyWithAndWithoutTheLane(string endpoint)
    {
        List<string> corpus = Corpus();
        Assert.True(corpus.Count >= 200, $"corpus has {corpus.Count} requests");
        (long appWithout, long appWith) = await AssertIdenticalAsync(endpoint, [.. corpus.Select(r => new[] { r + End })]);

        // The lane really answered most of them: only hand-offs (and each /__end) reached the app.
        Assert.True(appWith + 150 < appWithout, $"the app saw {appWith} requests through the lane, {appWithout} without it");
    }

    [Theory]
    [MemberData(nameof(Endpoints))]
    public async Task PipelinedBursts_AnsweredIdentically(string endpoint)
    {
        (long appWithout, long appWith) = await AssertIdenticalAsync(endpoint, [.. Bursts().Select(r => new[] { r + End })]);
        Assert.True(appWith + 50 < appWithout, $"the app saw {appWith} requests through the lane, {appWithout} without it");
    }

    [Fact]
    public async Task SplitAtEveryByte_AnsweredIdentically()
    {
        // Two servable requests and a conditional: every split point, plaintext.
        string exchange = Get("/one.txt") + Get("/data.txt", $"If-None-Match: {_f.ETag}\r\nRange: bytes=0-1\r\n") + Get("/page.js", "Accept-Encoding: br\r\n") + End;
        await AssertIdenticalAsync("plain", AtEverySplit(exchange));
    }

    // The exchange in two writes, for every point it can be cut at.
    private static List<string[]> AtEverySplit(string exchange)
        => [.. Enumerable.Range(1, exchange.Length - 1).Select(split => new[] { exchange[..split], exchange[split..] })];

    [Fact]
    public async Task Http2PrefaceAfterAnAnsweredRequest_SplitAtEveryByte_AnsweredIdentically()
    {
        // The lane waits for the preface's whole request line before it decides, wherever the reads end.
        await AssertIdenticalAsync("plain", AtEverySplit(Get("/one.txt") + Preface));
    }

    [Fact]
    public async Task Http2PrefaceAfterAnAnsweredRequest_OneByteAtATime_AnsweredIdentically()
    {
        // More reads than the lane waits for an ordinary partial request before handing it to Kestrel.
        string line = Preface[..16];
        await AssertIdenticalAsync("plain", [[Get("/one.txt"), .. line.Select(c => c.ToString()), Preface[16..]]]);
    }

    /// <summary>The HTTP/2 connection preface (RFC 9113 3.4).</summary>
    internal const string Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    [Fact]
    public async Task TheLaneAnswersWithoutTheApp()
    {
        long before = _f.Host.AppRequests;
        byte[] response = await LaneHost.ExchangeAsync(_f.Host.Lane, [Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat(Get("/one.txt"), 5)) + Get("/one.txt", "Connection: close\r\n"))]);
        Assert.Equal(6, CountOf(LaneHost.WithoutDates(response), "HTTP/1.1 200 OK"));
        Assert.Equal(before, _f.Host.AppRequests);
    }

    private static readonly TimeSpan SlowQuiet = TimeSpan.FromSeconds(20);

    // Returns how many requests reached the app without and with the lane.
    private async Task<(long Without, long With)> AssertIdenticalAsync(string endpoint, IReadOnlyList<string[]> exchanges)
    {
        long appWithout = 0, appWith = 0;
        Uri without = endpoint == "tls" ? _f.Host.Tls : _f.Host.Plain;
        Uri with = endpoint == "tls" ? _f.Host.LaneTls : _f.Host.Lane;
        var failures = new List<string>();
        foreach (string[] exchange in exchanges)
        {
            byte[][] chunks = [.. exchange.Select(c => Encoding.Latin1.GetBytes(c))];
            long before = _f.Host.AppRequests;
            string expected = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(without, chunks, TimeSpan.FromSeconds(3)));
            long middle = _f.Host.AppRequests;
            string actual = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(with, chunks, TimeSpan.FromSeconds(3)));
            appWithout += middle - before;
            appWith += _f.Host.AppRequests - middle;
            Assert.NotEmpty(expected);
            if (expected != actual)
            {
                // An exchange ends at the server's close or after a quiet period; on a loaded machine a response can be
                // later than the short one. A difference counts only if it stands with a quiet period no answer misses.
                expected = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(without, chunks, SlowQuiet));
                actual = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(with, chunks, SlowQuiet));
            }

            if (expected != actual)
            {
                failures.Add($"--- request ({string.Join(" | ", exchange.Select(c => c.Length))} bytes): {Escape(string.Concat(exchange))}\n--- without lane:\n{Escape(Head(expected))}\n--- with lane:\n{Escape(Head(actual))}");
            }
        }

        Assert.True(failures.Count == 0, $"{failures.Count} of {exchanges.Count} differ:\n" + string.Join("\n", failures.Take(5)));
        return (appWithout, appWith);
    }

    private static string Head(string s) => s.Length > 600 ? s[..600] + "..." : s;

    private static string Escape(string s) => s.Length > 300 ? Escape(s[..300]) + "..." : s.Replace("\r", "\\r").Replace("\n", "\\n\n").Replace("\0", "\\0");

    private static int CountOf(string s, string what)
    {
        int count = 0;
        for (int i = s.IndexOf(what, StringComparison.Ordinal); i >= 0; i = s.IndexOf(what, i + 1, StringComparison.Ordinal))
        {
            count++;
        }

        return count;
    }
}
