using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.IO.Compression;
using System.Net;
using System.Net.Http.Headers;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// Dynamic compression (<see cref="FastStaticFileOptions.EnableDynamicCompression"/>): brotli and gzip variants made once
/// per version in the background, served like sidecars over HTTP/1.1, h2c and h2 over TLS.
/// </summary>
public sealed class DynamicCompressionTests(DynamicCompressionTests.Fixture fixture) : IClassFixture<DynamicCompressionTests.Fixture>
{
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public byte[] Css { get; private set; } = [];

        public byte[] Js { get; private set; } = [];

        public byte[] Side { get; private set; } = [];

        public byte[] SideGz { get; private set; } = [];

        protected override async Task<TestHost> StartHostAsync()
        {
            // app.css is small enough for the content cache; big.js is read from disk to be compressed.
            Css = Text(60_000, 1);
            Js = Text(300_000, 2);
            Side = Text(20_000, 3);
            SideGz = Compression.Gzip(Side);
            Files.Write("app.css", Css);
            Files.Write("big.js", Js);
            Files.Write("side.js", Side);
            Files.Write("side.js.gz", SideGz);
            File.SetLastWriteTimeUtc(Files.PathOf("side.js.gz"), File.GetLastWriteTimeUtc(Files.PathOf("side.js")).AddSeconds(1));
            Files.Write("tiny.css", Text(500, 4));
            Files.Write("image.png", Text(5_000, 5));
            Files.Create("noise.txt", 8_000);
            Files.Write("hostile.css", Text(30_000, 6));
            Files.Write("partial.css", Text(40_000, 7));
            return await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
            {
                FileProvider = new PhysicalFileProvider(Files.Root),
                EnableDynamicCompression = true,
            }));
        }
    }

    /// <summary>Stylesheet-like text: deterministic, compressible, <paramref name="length"/> bytes.</summary>
    public static byte[] Text(int length, int seed)
    {
        var random = new Random(seed);
        var text = new StringBuilder(length + 100);
        for (int i = 0; text.Length < length; i++)
        {
            text.Append(System.Globalization.CultureInfo.InvariantCulture,
                $".c{i}-{random.Next(1000)} {{ color: #{random.Next(0xffffff):x6}; margin: {random.Next(40)}px {random.Next(40)}px; }}\n");
        }

        return Encoding.ASCII.GetBytes(text.ToString(0, length));
    }

    [Theory]
    [Transports]
    public async Task Variants_decompress_to_the_file_and_identity_stays_available(Transport transport)
    {
        foreach ((string path, byte[] file) in new[] { ("/app.css", _f.Css), ("/big.js", _f.Js) })
        {
            foreach (string coding in new[] { "br", "gzip" })
            {
                using HttpResponseMessage encoded = await Compression.WaitForEncodingAsync(_f.Host, transport, path, coding);
                byte[] body = await encoded.Content.ReadAsByteArrayAsync();
                Assert.Equal(body.Length, encoded.Content.Headers.ContentLength);
                Assert.True(body.Length < file.Length / 2, $"{coding} of {path}: {body.Length} bytes");
                Assert.Equal(file, Compression.Decode(coding, body));
                Assert.Equal("Accept-Encoding", encoded.Header("Vary"));
                Assert.EndsWith($"-{coding}\"", encoded.Header("ETag"));
                Assert.Equal("bytes", encoded.Header("Accept-Ranges"));
            }

            using HttpResponseMessage identity = await _f.Host.SendAsync(transport, path);
            Assert.Empty(identity.Content.Headers.ContentEncoding);
            Assert.Equal("Accept-Encoding", identity.Header("Vary"));
            Assert.Equal(file, await identity.Content.ReadAsByteArrayAsync());
            Assert.DoesNotContain("-br", identity.Header("ETag"));
        }
    }

    [Theory]
    [Transports]
    public async Task Head_describes_the_variant_without_a_body(Transport transport)
    {
        using HttpResponseMessage get = await Compression.WaitForEncodingAsync(_f.Host, transport, "/app.css", "gzip");
        byte[] body = await get.Content.ReadAsByteArrayAsync();
        using HttpResponseMessage head = await _f.Host.SendAsync(transport, "/app.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip"), HttpMethod.Head);
        Assert.Equal(HttpStatusCode.OK, head.StatusCode);
        Assert.Equal("gzip", head.Header("Content-Encoding"));
        Assert.Equal(body.Length, head.Content.Headers.ContentLength);
        Assert.Equal(get.Header("ETag"), head.Header("ETag"));
        Assert.Empty(await head.Content.ReadAsByteArrayAsync());
    }

    // A HEAD or a range asks for little of the body: compressing the whole file for it (and again whenever the variant was
    // evicted before anyone got it) costs CPU for bytes nobody is sent. The first whole-body GET starts it.
    [Fact]
    public async Task Only_a_whole_body_request_starts_compression()
    {
        foreach (Transport transport in new[] { Transport.Http11, Transport.H2c })
        {
            using HttpResponseMessage head = await _f.Host.SendAsync(transport, "/partial.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br"), HttpMethod.Head);
            Assert.Null(head.Header("Content-Encoding"));
            using HttpResponseMessage range = await _f.Host.SendAsync(transport, "/partial.css", r => AcceptAndRange(r, "br", "bytes=0-0"));
            Assert.Equal(HttpStatusCode.PartialContent, range.StatusCode);
            Assert.Null(range.Header("Content-Encoding"));
        }

        // Time enough for a compression those requests would have queued (a 40 KB stylesheet takes milliseconds).
        await Task.Delay(300);
        using HttpResponseMessage first = await _f.Host.SendAsync(Transport.Http11, "/partial.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br"));
        Assert.Null(first.Header("Content-Encoding"));
        Assert.Equal("Accept-Encoding", first.Header("Vary"));
        using HttpResponseMessage later = await Compression.WaitForEncodingAsync(_f.Host, Transport.Http11, "/partial.css", "br");
        Assert.Equal("br", later.Header("Content-Encoding"));
    }

    [Theory]
    [Transports]
    public async Task Ranges_address_the_compressed_bytes(Transport transport)
    {
        using HttpResponseMessage full = await Compression.WaitForEncodingAsync(_f.Host, transport, "/app.css", "br");
        byte[] br = await full.Content.ReadAsByteArrayAsync();
        string etag = full.Header("ETag")!;

        using HttpResponseMessage single = await _f.Host.SendAsync(transport, "/app.css", r => AcceptAndRange(r, "br", "bytes=10-109"));
        Assert.Equal(HttpStatusCode.PartialContent, single.StatusCode);
        Assert.Equal("br", single.Header("Content-Encoding"));
        Assert.Equal($"bytes 10-109/{br.Length}", single.Header("Content-Range"));
        Assert.Equal(br.AsSpan(10, 100).ToArray(), await single.Content.ReadAsByteArrayAsync());

        // Several ranges of a variant: the whole variant, never a multipart body under Content-Encoding.
        using HttpResponseMessage multi = await _f.Host.SendAsync(transport, "/app.css", r => AcceptAndRange(r, "br", "bytes=0-49,1000-1099,-20"));
        Assert.Equal(HttpStatusCode.OK, multi.StatusCode);
        Assert.Equal("br", multi.Header("Content-Encoding"));
        Assert.Equal("text/css", multi.Content.Headers.ContentType!.MediaType);
        Assert.Equal(br, await multi.Content.ReadAsByteArrayAsync());

        // RFC 9110 13.1.5: If-Range with this coding's tag keeps the range; the identity's tag does not match it.
        using HttpResponseMessage sameTag = await _f.Host.SendAsync(transport, "/app.css", r =>
        {
            AcceptAndRange(r, "br", "bytes=0-9");
            r.Headers.TryAddWithoutValidation("If-Range", etag);
        });
        Assert.Equal(HttpStatusCode.PartialContent, sameTag.StatusCode);
        using HttpResponseMessage identityTag = await _f.Host.SendAsync(transport, "/app.css", r =>
        {
            AcceptAndRange(r, "br", "bytes=0-9");
            r.Headers.TryAddWithoutValidation("If-Range", etag.Replace("-br\"", "\"", StringComparison.Ordinal));
        });
        Assert.Equal(HttpStatusCode.OK, identityTag.StatusCode);
        Assert.Equal(br, await identityTag.Content.ReadAsByteArrayAsync());

        using HttpResponseMessage unsatisfiable = await _f.Host.SendAsync(transport, "/app.css", r => AcceptAndRange(r, "br", $"bytes={br.Length}-"));
        Assert.Equal(HttpStatusCode.RequestedRangeNotSatisfiable, unsatisfiable.StatusCode);
        Assert.Equal($"bytes */{br.Length}", unsatisfiable.Header("Content-Range"));
    }

    [Theory]
    [Transports]
    public async Task Conditional_requests_compare_each_codings_own_tag(Transport transport)
    {
        using HttpResponseMessage br = await Compression.WaitForEncodingAsync(_f.Host, transport, "/app.css", "br");
        using HttpResponseMessage gzip = await Compression.WaitForEncodingAsync(_f.Host, transport, "/app.css", "gzip");
        using HttpResponseMessage identity = await _f.Host.SendAsync(transport, "/app.css");
        string brTag = br.Header("ETag")!, gzipTag = gzip.Header("ETag")!, identityTag = identity.Header("ETag")!;
        Assert.Equal(3, new HashSet<string> { brTag, gzipTag, identityTag }.Count);

        async Task<HttpResponseMessage> Conditional(string? acceptEncoding, string ifNoneMatch)
            => await _f.Host.SendAsync(transport, "/app.css", r =>
            {
                if (acceptEncoding is not null)
                {
                    r.Headers.TryAddWithoutValidation("Accept-Encoding", acceptEncoding);
                }

                r.Headers.TryAddWithoutValidation("If-None-Match", ifNoneMatch);
            });

        using HttpResponseMessage notModified = await Conditional("br", brTag);
        Assert.Equal(HttpStatusCode.NotModified, notModified.StatusCode);
        Assert.Equal(brTag, notModified.Header("ETag"));
        Assert.Equal("Accept-Encoding", notModified.Header("Vary"));

        // RFC 9110 13.1.2: If-None-Match compares weakly.
        using HttpResponseMessage weak = await Conditional("gzip, br", "W/" + brTag);
        Assert.Equal(HttpStatusCode.NotModified, weak.StatusCode);

        using HttpResponseMessage otherCoding = await Conditional("gzip", brTag);
        Assert.Equal(HttpStatusCode.OK, otherCoding.StatusCode);
        Assert.Equal("gzip", otherCoding.Header("Content-Encoding"));
        Assert.Equal(_f.Css, Compression.Decode("gzip", await otherCoding.Content.ReadAsByteArrayAsync()));

        using HttpResponseMessage identityMatch = await Conditional(null, identityTag);
        Assert.Equal(HttpStatusCode.NotModified, identityMatch.StatusCode);

        using HttpResponseMessage identityTagBrRequest = await Conditional("br", identityTag);
        Assert.Equal(HttpStatusCode.OK, identityTagBrRequest.StatusCode);
        Assert.Equal("br", identityTagBrRequest.Header("Content-Encoding"));
    }

    public static TheoryData<Transport, string, string> Qualities()
    {
        var data = new TheoryData<Transport, string, string>();
        foreach (Transport t in TransportMatrix.Default)
        {
            data.Add(t, "gzip, deflate, br, zstd", "br");
            data.Add(t, "br;q=0.5, gzip", "gzip");
            data.Add(t, "gzip;q=0.5, br", "br");
            data.Add(t, "br;q=0, gzip;q=0", "");
            data.Add(t, "identity;q=0", "");
            data.Add(t, "identity;q=0, gzip", "gzip");
            data.Add(t, "br;q=0.1, identity", "");
            data.Add(t, "*", "br");
            data.Add(t, "*;q=0.3, br;q=0", "gzip");
            data.Add(t, "*;q=0, identity", "");
            data.Add(t, "deflate", "");
            data.Add(t, "x-gzip", "gzip");
            data.Add(t, "GZIP;Q=1", "gzip");
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Qualities))]
    public async Task Quality_values_choose_the_variant(Transport transport, string acceptEncoding, string expected)
    {
        (await Compression.WaitForEncodingAsync(_f.Host, transport, "/app.css", "br")).Dispose();
        (await Compression.WaitForEncodingAsync(_f.Host, transport, "/app.css", "gzip")).Dispose();

        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/app.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", acceptEncoding));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(expected, response.Header("Content-Encoding") ?? "");
        Assert.Equal(_f.Css, Compression.Decode(expected, await response.Content.ReadAsByteArrayAsync()));
    }

    [Theory]
    [Transports]
    public async Task Files_outside_the_policy_are_sent_as_they_are(Transport transport)
    {
        foreach (string path in new[] { "/tiny.css", "/image.png" })
        {
            // Requested repeatedly: nothing is ever queued for them, so nothing can turn up later.
            for (int i = 0; i < 3; i++)
            {
                using HttpResponseMessage response = await _f.Host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br, gzip"));
                Assert.Equal(HttpStatusCode.OK, response.StatusCode);
                Assert.Empty(response.Content.Headers.ContentEncoding);
                Assert.Null(response.Header("Vary"));
            }
        }
    }

    [Fact]
    public async Task Output_that_is_not_smaller_is_not_kept()
    {
        using var notSmaller = new InstrumentRecorder(_f.Host.Services.GetRequiredService<IMeterFactory>(), "fastfiles.compression.variants", new("fastfiles.compression.outcome", "not_smaller"));
        byte[] noise = File.ReadAllBytes(_f.Files.PathOf("noise.txt"));
        using (HttpResponseMessage first = await _f.Host.SendAsync(Transport.Http11, "/noise.txt", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br, gzip")))
        {
            Assert.Equal("Accept-Encoding", first.Header("Vary"));
        }

        await Compression.PollAsync(() => notSmaller.Total >= 2, "both codings of random bytes found not worth keeping");
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/noise.txt", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br, gzip"));
        Assert.Empty(response.Content.Headers.ContentEncoding);
        Assert.Equal(noise, await response.Content.ReadAsByteArrayAsync());
    }

    [Theory]
    [Transports]
    public async Task A_sidecar_on_disk_wins_over_its_dynamic_coding(Transport transport)
    {
        using HttpResponseMessage br = await Compression.WaitForEncodingAsync(_f.Host, transport, "/side.js", "br");
        Assert.Equal(_f.Side, Compression.Decode("br", await br.Content.ReadAsByteArrayAsync()));

        for (int i = 0; i < 3; i++)
        {
            using HttpResponseMessage gzip = await _f.Host.SendAsync(transport, "/side.js", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip"));
            Assert.Equal("gzip", gzip.Header("Content-Encoding"));
            Assert.Equal(_f.SideGz, await gzip.Content.ReadAsByteArrayAsync());
        }
    }

    public static TheoryData<Transport, int> Hostile()
    {
        var data = new TheoryData<Transport, int>();
        foreach (Transport t in TransportMatrix.Default)
        {
            for (int i = 0; i < HostileValues.Length; i++)
            {
                data.Add(t, i);
            }
        }

        return data;
    }

    // Thousands of tokens, each value under HTTP/2's 16 KiB field limit in Kestrel (HTTP/1.1 allows 32 KiB of fields).
    private static readonly string[] HostileValues =
    [
        string.Join(", ", Enumerable.Range(0, 2000).Select(i => $"c{i}")) + ", br",
        string.Concat(Enumerable.Repeat("br;q=0.5,", 1500)) + "gzip",
        new string(',', 12_000) + "gzip",
        string.Concat(Enumerable.Repeat(";;;;", 3000)),
        string.Concat(Enumerable.Repeat("br;q=0." + new string('9', 40) + ",", 250)),
        "br;q=1e99999, gzip;q=NaN, identity;q=-1, *;q=, ;q=1, q=1, br;;q=1, gzip ; q = 1 ",
        string.Concat(Enumerable.Repeat("identity;q=0, *;q=0, ", 500)),
        string.Concat(Enumerable.Repeat("\t ", 5000)) + "br",
    ];

    [Theory]
    [MemberData(nameof(Hostile))]
    public async Task Hostile_accept_encoding_is_never_a_server_error(Transport transport, int index)
    {
        (await Compression.WaitForEncodingAsync(_f.Host, transport, "/hostile.css", "br")).Dispose();
        byte[] file = File.ReadAllBytes(_f.Files.PathOf("hostile.css"));
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/hostile.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", HostileValues[index]));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        string coding = response.Header("Content-Encoding") ?? "";
        Assert.Equal(file, Compression.Decode(coding, await response.Content.ReadAsByteArrayAsync()));
    }

    [Theory]
    [InlineData("--http1.1")]
    [InlineData("--http2-prior-knowledge")]
    [InlineData("--http2")]
    public async Task Curl_decodes_the_variant_and_reads_its_ranges(string protocol)
    {
        Transport transport = protocol == "--http2" ? Transport.H2Tls : protocol == "--http1.1" ? Transport.Http11 : Transport.H2c;
        using HttpResponseMessage ready = await Compression.WaitForEncodingAsync(_f.Host, transport, "/big.js", "br");
        byte[] br = await ready.Content.ReadAsByteArrayAsync();
        string url = new Uri(_f.Host.BaseFor(transport), "/big.js").ToString();

        // --compressed: curl offers every coding it decodes (br, zstd, gzip, deflate) and decodes the answer.
        string headers = _f.Files.PathOf($"curl-{Guid.NewGuid():N}.headers"), body = _f.Files.PathOf($"curl-{Guid.NewGuid():N}.body");
        Assert.Equal("200", await Curl(protocol, "--compressed", "-D", headers, "-o", body, url));
        Assert.Contains("content-encoding: br", File.ReadAllText(headers), StringComparison.OrdinalIgnoreCase);
        Assert.Equal(_f.Js, File.ReadAllBytes(body));

        // Several ranges with --compressed: the whole variant, which curl decodes (a multipart body under
        // Content-Encoding is one it cannot).
        Assert.Equal("200", await Curl(protocol, "--compressed", "-r", "0-99,5000-5099", "-D", headers, "-o", body, url));
        Assert.Contains("content-encoding: br", File.ReadAllText(headers), StringComparison.OrdinalIgnoreCase);
        Assert.Equal(_f.Js, File.ReadAllBytes(body));

        // One range of the variant: the encoded bytes.
        Assert.Equal("206", await Curl(protocol, "-H", "Accept-Encoding: br", "-r", "5000-5099", "-D", headers, "-o", body, url));
        Assert.Contains($"content-range: bytes 5000-5099/{br.Length}", File.ReadAllText(headers), StringComparison.OrdinalIgnoreCase);
        Assert.Equal(br.AsSpan(5000, 100).ToArray(), File.ReadAllBytes(body));

        File.Delete(headers);
        File.Delete(body);
    }

    private static Task<string> Curl(params string[] args) => CurlClient.RunAsync(["-w", "%{http_code}", .. args]);

    private static void AcceptAndRange(HttpRequestMessage request, string acceptEncoding, string range)
    {
        request.Headers.TryAddWithoutValidation("Accept-Encoding", acceptEncoding);
        request.Headers.TryAddWithoutValidation("Range", range);
    }
}

/// <summary>Encoding helpers for the dynamic compression tests.</summary>
public static class Compression
{
    public static byte[] Gzip(byte[] data)
    {
        var output = new MemoryStream();
        using (var gzip = new GZipStream(output, CompressionLevel.Optimal, leaveOpen: true))
        {
            gzip.Write(data);
        }

        return output.ToArray();
    }

    /// <summary>Decodes a body sent with Content-Encoding <paramref name="coding"/> ("" for none) with the framework's decoders.</summary>
    public static byte[] Decode(string coding, byte[] body)
    {
        if (coding.Length == 0)
        {
            return body;
        }

        using Stream decoder = coding switch
        {
            "br" => new BrotliStream(new MemoryStream(body), CompressionMode.Decompress),
            "gzip" => new GZipStream(new MemoryStream(body), CompressionMode.Decompress),
            _ => throw new InvalidOperationException("unexpected coding " + coding),
        };
        var output = new MemoryStream();
        decoder.CopyTo(output);
        return output.ToArray();
    }

    /// <summary>Requests <paramref name="path"/> accepting only <paramref name="coding"/> until the variant is served (bounded poll).</summary>
    public static async Task<HttpResponseMessage> WaitForEncodingAsync(TestHost host, Transport transport, string path, string coding)
    {
        Stopwatch waited = Stopwatch.StartNew();
        while (true)
        {
            HttpResponseMessage response = await host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("Accept-Encoding", coding));
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            if (response.Header("Content-Encoding") == coding)
            {
                return response;
            }

            Assert.Null(response.Header("Content-Encoding"));
            response.Dispose();
            Assert.True(waited.Elapsed < TimeSpan.FromSeconds(60), $"no {coding} variant of {path} after 60 s");
            await Task.Delay(20);
        }
    }

    /// <summary>Waits (bounded) until <paramref name="condition"/> holds.</summary>
    public static async Task PollAsync(Func<Task<bool>> condition, string what)
    {
        Stopwatch waited = Stopwatch.StartNew();
        while (!await condition())
        {
            Assert.True(waited.Elapsed < TimeSpan.FromSeconds(60), "timed out waiting for: " + what);
            await Task.Delay(20);
        }
    }

    /// <summary>Waits (bounded) until <paramref name="condition"/> holds.</summary>
    public static async Task PollAsync(Func<bool> condition, string what)
    {
        Stopwatch waited = Stopwatch.StartNew();
        while (!condition())
        {
            Assert.True(waited.Elapsed < TimeSpan.FromSeconds(60), "timed out waiting for: " + what);
            await Task.Delay(20);
        }
    }
}
