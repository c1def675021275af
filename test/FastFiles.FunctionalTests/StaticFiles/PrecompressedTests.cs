using System.Globalization;
using System.IO.Compression;
using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>Precompressed sidecars (<c>file.br</c>, <c>file.zst</c>, <c>file.gz</c>) chosen by Accept-Encoding.</summary>
public sealed class PrecompressedTests(PrecompressedTests.Fixture fixture) : IClassFixture<PrecompressedTests.Fixture>
{
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        private static readonly DateTime Original = new(2021, 6, 1, 12, 0, 0, DateTimeKind.Utc);

        public Dictionary<string, byte[]> Variants { get; } = [];

        protected override async Task<TestHost> StartHostAsync()
        {
            byte[] js = Encoding.UTF8.GetBytes(string.Concat(Enumerable.Range(0, 2000).Select(i => $"var v{i} = {i};\n")));
            Variants[""] = js;
            Variants["br"] = Compress(js, s => new BrotliStream(s, CompressionLevel.Optimal));
            Variants["gzip"] = Compress(js, s => new GZipStream(s, CompressionLevel.Optimal));
            // Any bytes will do for zstd: FastFiles never looks inside a sidecar.
            Variants["zstd"] = Encoding.ASCII.GetBytes("pretend-zstd-" + new string('z', 500));
            Write("app.js", js, Original);
            Write("app.js.br", Variants["br"], Original.AddSeconds(1));
            Write("app.js.gz", Variants["gzip"], Original);
            Write("app.js.zst", Variants["zstd"], Original.AddDays(1));
            Write("only-gz.txt", js, Original);
            Write("only-gz.txt.gz", Variants["gzip"], Original);
            Write("stale.css", js, Original);
            Write("stale.css.gz", Variants["gzip"], Original.AddSeconds(-5));
            Write("plain.txt", js, Original);

            return await TestHost.StartAsync(app =>
            {
                app.UseFastFiles(new FastStaticFileOptions
                {
                    RequestPath = "/off",
                    FileProvider = new PhysicalFileProvider(Files.Root),
                    EnablePrecompressedFiles = false,
                });
                app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(Files.Root) });
            });
        }

        private static byte[] Compress(byte[] data, Func<Stream, Stream> wrap)
        {
            var output = new MemoryStream();
            using (Stream compressor = wrap(output))
            {
                compressor.Write(data);
            }

            return output.ToArray();
        }

        private void Write(string name, byte[] bytes, DateTime modified)
        {
            Files.Write(name, bytes);
            File.SetLastWriteTimeUtc(Files.PathOf(name), modified);
        }
    }

    public static TheoryData<Transport, string?, string> Negotiation()
    {
        var data = new TheoryData<Transport, string?, string>();
        foreach (Transport t in TransportMatrix.Default)
        {
            data.Add(t, null, "");
            data.Add(t, "", "");
            data.Add(t, "gzip", "gzip");
            data.Add(t, "br", "br");
            data.Add(t, "zstd", "zstd");
            data.Add(t, "gzip, br", "br");
            data.Add(t, "gzip, deflate, br, zstd", "br");
            data.Add(t, "zstd, gzip", "zstd");
            data.Add(t, "br;q=0.5, gzip;q=0.9", "gzip");
            data.Add(t, "gzip;q=0.8, zstd;q=0.5", "gzip");
            data.Add(t, "br;q=0, gzip", "gzip");
            data.Add(t, "gzip;q=0", "");
            data.Add(t, "br;q=0, gzip;q=0, zstd;q=0", "");
            data.Add(t, "*", "br");
            data.Add(t, "*, br;q=0", "zstd");
            data.Add(t, "*;q=0", "");
            data.Add(t, "identity;q=0, gzip", "gzip");
            data.Add(t, "identity;q=0", "");
            data.Add(t, "gzip;q=0.5, identity", "");
            data.Add(t, "deflate", "");
            data.Add(t, "GZIP", "gzip");
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Negotiation))]
    public async Task Accept_encoding_picks_the_sidecar(Transport transport, string? acceptEncoding, string coding)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/app.js", r =>
        {
            if (acceptEncoding is not null)
            {
                r.Headers.TryAddWithoutValidation("Accept-Encoding", acceptEncoding);
            }
        });
        byte[] expected = _f.Variants[coding];
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(coding.Length == 0 ? null : coding, response.Header("Content-Encoding"));
        Assert.Equal("Accept-Encoding", response.Header("Vary"));
        // The original's type, whatever the coding.
        Assert.Equal("text/javascript", response.Content.Headers.ContentType?.MediaType);
        Assert.Equal(expected.Length, response.Content.Headers.ContentLength);
        Assert.Equal(expected, await response.Content.ReadAsByteArrayAsync());
    }

    // A 412 or 416 depends on the variant Accept-Encoding selected (its tag, its length): it says so as a 200 does
    // (RFC 9110 12.5.5), so a cache never hands one coding's answer to a request for another.
    [Theory]
    [InlineData(Transport.Http11, "br", "Range", "bytes=100000-", 416)]
    [InlineData(Transport.Http11, null, "Range", "bytes=100000-", 416)]
    [InlineData(Transport.H2c, "gzip", "If-Match", "\"nope\"", 412)]
    [InlineData(Transport.Http11, "gzip", "If-Match", "garbage", 412)]
    public async Task Failed_conditions_and_unsatisfiable_ranges_carry_vary(Transport transport, string? acceptEncoding, string name, string value, int status)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/app.js", r =>
        {
            r.Headers.TryAddWithoutValidation(name, value);
            if (acceptEncoding is not null)
            {
                r.Headers.TryAddWithoutValidation("Accept-Encoding", acceptEncoding);
            }
        });
        Assert.Equal(status, (int)response.StatusCode);
        Assert.Equal("Accept-Encoding", response.Header("Vary"));
        if (status == 416)
        {
            Assert.Equal($"bytes */{_f.Variants[acceptEncoding ?? string.Empty].Length}", response.Header("Content-Range"));
        }

        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Each_variant_has_its_own_etag()
    {
        var etags = new HashSet<string>(StringComparer.Ordinal);
        foreach (string coding in new[] { "identity", "gzip", "br", "zstd" })
        {
            using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/app.js", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", coding));
            Assert.True(etags.Add(response.Header("ETag")!));
            Assert.False(response.Headers.ETag!.IsWeak);
        }

        Assert.Equal(4, etags.Count);
    }

    [Theory]
    [Transports]
    public async Task Ranges_apply_to_the_variant_bytes(Transport transport)
    {
        byte[] br = _f.Variants["br"];
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/app.js", r =>
        {
            r.Headers.TryAddWithoutValidation("Accept-Encoding", "br");
            r.Headers.TryAddWithoutValidation("Range", "bytes=10-49");
        });
        Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
        Assert.Equal("br", response.Header("Content-Encoding"));
        Assert.Equal(string.Create(CultureInfo.InvariantCulture, $"bytes 10-49/{br.Length}"), response.Header("Content-Range"));
        Assert.Equal(br.AsSpan(10, 40).ToArray(), await response.Content.ReadAsByteArrayAsync());

        using HttpResponseMessage suffix = await _f.Host.SendAsync(transport, "/app.js", r =>
        {
            r.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip");
            r.Headers.TryAddWithoutValidation("Range", "bytes=-7");
        });
        byte[] gz = _f.Variants["gzip"];
        Assert.Equal(HttpStatusCode.PartialContent, suffix.StatusCode);
        Assert.Equal(gz.AsSpan(gz.Length - 7).ToArray(), await suffix.Content.ReadAsByteArrayAsync());

        // Past the end of the (small) variant but inside the identity file: 416 against the variant's length.
        using HttpResponseMessage beyond = await _f.Host.SendAsync(transport, "/app.js", r =>
        {
            r.Headers.TryAddWithoutValidation("Accept-Encoding", "zstd");
            r.Headers.TryAddWithoutValidation("Range", string.Create(CultureInfo.InvariantCulture, $"bytes={_f.Variants["zstd"].Length}-"));
        });
        Assert.Equal(HttpStatusCode.RequestedRangeNotSatisfiable, beyond.StatusCode);
        Assert.Equal(string.Create(CultureInfo.InvariantCulture, $"bytes */{_f.Variants["zstd"].Length}"), beyond.Header("Content-Range"));
    }

    [Fact]
    public async Task Conditionals_use_the_variant_etag()
    {
        using HttpResponseMessage first = await _f.Host.SendAsync(Transport.Http11, "/app.js", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br"));
        string brETag = first.Header("ETag")!;
        using HttpResponseMessage again = await _f.Host.SendAsync(Transport.Http11, "/app.js", r =>
        {
            r.Headers.TryAddWithoutValidation("Accept-Encoding", "br");
            r.Headers.TryAddWithoutValidation("If-None-Match", brETag);
        });
        Assert.Equal(HttpStatusCode.NotModified, again.StatusCode);
        Assert.Equal(brETag, again.Header("ETag"));
        Assert.Equal("Accept-Encoding", again.Header("Vary"));

        using HttpResponseMessage other = await _f.Host.SendAsync(Transport.Http11, "/app.js", r =>
        {
            r.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip");
            r.Headers.TryAddWithoutValidation("If-None-Match", brETag);
        });
        Assert.Equal(HttpStatusCode.OK, other.StatusCode);
        Assert.Equal("gzip", other.Header("Content-Encoding"));
    }

    [Theory]
    [Transports]
    public async Task Head_describes_the_variant(Transport transport)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/app.js", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br"), HttpMethod.Head);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("br", response.Header("Content-Encoding"));
        Assert.Equal(_f.Variants["br"].Length, response.Content.Headers.ContentLength);
        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Only_the_sidecars_that_exist_are_offered()
    {
        using HttpResponseMessage br = await _f.Host.SendAsync(Transport.Http11, "/only-gz.txt", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br, gzip;q=0.1"));
        Assert.Equal("gzip", br.Header("Content-Encoding"));
        Assert.Equal(_f.Variants["gzip"], await br.Content.ReadAsByteArrayAsync());
        Assert.Equal("text/plain", br.Content.Headers.ContentType?.MediaType);

        using HttpResponseMessage brOnly = await _f.Host.SendAsync(Transport.Http11, "/only-gz.txt", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br"));
        Assert.Null(brOnly.Header("Content-Encoding"));
        Assert.Equal("Accept-Encoding", brOnly.Header("Vary"));
        Assert.Equal(_f.Variants[""], await brOnly.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task No_sidecar_is_identity_without_vary()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/plain.txt", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br, gzip, zstd"));
        Assert.Null(response.Header("Content-Encoding"));
        Assert.Null(response.Header("Vary"));
        Assert.Equal(_f.Variants[""], await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task A_sidecar_older_than_the_original_is_ignored()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/stale.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip"));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Null(response.Header("Content-Encoding"));
        Assert.Equal("text/css", response.Content.Headers.ContentType?.MediaType);
        Assert.Equal(_f.Variants[""], await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Sidecars_can_be_turned_off()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/off/app.js", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br, gzip"));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Null(response.Header("Content-Encoding"));
        Assert.Null(response.Header("Vary"));
        Assert.Equal(_f.Variants[""], await response.Content.ReadAsByteArrayAsync());
    }
}
