using System.Diagnostics;
using System.Globalization;
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
/// Multiple ranges (RFC 9110 14.6): 206 multipart/byteranges read back with an independent parser
/// (<see cref="MultipartReader"/>) and compared part by part with the file; coalescing and the amplification
/// defences (RFC 9110 14.2, CVE-2011-3192) against hostile range sets.
/// </summary>
public sealed class MultiRangeTests(MultiRangeTests.Fixture fixture) : IClassFixture<MultiRangeTests.Fixture>
{
    private const int SmallLength = 10_000;
    private const int LargeLength = 3 * 1024 * 1024 + 17;
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public byte[] Small { get; private set; } = [];

        public byte[] Large { get; private set; } = [];

        public byte[] Js { get; private set; } = [];

        public byte[] JsBrotli { get; private set; } = [];

        protected override async Task<TestHost> StartHostAsync()
        {
            Small = Files.Create("small.bin", SmallLength);
            Large = Files.Create("large.bin", LargeLength);
            Js = Encoding.UTF8.GetBytes(string.Concat(Enumerable.Range(0, 3000).Select(i => $"var v{i} = {i};\n")));
            var compressed = new MemoryStream();
            using (var brotli = new BrotliStream(compressed, CompressionLevel.Optimal, leaveOpen: true))
            {
                brotli.Write(Js);
            }

            JsBrotli = compressed.ToArray();
            Files.Write("app.js", Js);
            Files.Write("app.js.br", JsBrotli);
            return await TestHost.StartAsync(
                app => app.UseFastFiles(new FastStaticFileOptions
                {
                    FileProvider = new PhysicalFileProvider(Files.Root),
                    ServeUnknownFileTypes = true,
                    DefaultContentType = "application/octet-stream",
                }),
                services => services.AddFastFiles());
        }
    }

    public static TheoryData<Transport, string, string> Multipart()
    {
        var data = new TheoryData<Transport, string, string>();
        foreach (Transport transport in TransportMatrix.Default)
        {
            foreach (string file in new[] { "small.bin", "large.bin" })
            {
                data.Add(transport, file, "bytes=0-99,200-299");
                // Requested order is kept when nothing is coalesced (RFC 9110 14.6), descending included.
                data.Add(transport, file, "bytes=-100,0-9");
                data.Add(transport, file, "bytes=10-19, 5000-5099 ,9000-");
            }

            data.Add(transport, "large.bin", "bytes=0-65535,1048576-2097151,3145000-");
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Multipart))]
    public async Task Several_ranges_are_a_multipart_body_whose_every_part_is_the_file(Transport transport, string file, string range)
    {
        byte[] content = file == "small.bin" ? _f.Small : _f.Large;
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/" + file, r => r.Headers.TryAddWithoutValidation("Range", range));
        Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
        List<(long Start, long End)> expected = ExpectedParts(range, content.Length);
        List<MultipartPart> parts = await ReadMultipartAsync(response);
        Assert.Equal(expected.Count, parts.Count);
        for (int i = 0; i < parts.Count; i++)
        {
            (long start, long end) = expected[i];
            Assert.Equal("application/octet-stream", parts[i].ContentType);
            Assert.Equal($"bytes {start}-{end}/{content.Length}", parts[i].ContentRange);
            Assert.True(content.AsSpan((int)start, (int)(end - start + 1)).SequenceEqual(parts[i].Body), $"part {i} differs");
        }
    }

    [Theory]
    [InlineData(Transport.Http11)]
    [InlineData(Transport.H2c)]
    [InlineData(Transport.H2Tls)]
    public async Task Several_ranges_of_a_precompressed_variant_get_the_whole_variant(Transport transport)
    {
        // A multipart 206 would carry Content-Encoding, which clients apply to the multipart body itself.
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/app.js", r =>
        {
            r.Headers.TryAddWithoutValidation("Range", "bytes=0-9,100-199");
            r.Headers.AcceptEncoding.ParseAdd("br");
        });
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("br", response.Content.Headers.ContentEncoding.Single());
        Assert.Equal("Accept-Encoding", response.Header("Vary"));
        Assert.Equal("text/javascript", response.Content.Headers.ContentType!.MediaType);
        Assert.Null(response.Content.Headers.ContentRange);
        Assert.Equal(_f.JsBrotli, await response.Content.ReadAsByteArrayAsync());

        // The identity representation keeps its parts.
        using HttpResponseMessage identity = await _f.Host.SendAsync(transport, "/app.js", r => r.Headers.TryAddWithoutValidation("Range", "bytes=0-9,100-199"));
        Assert.Equal(HttpStatusCode.PartialContent, identity.StatusCode);
        Assert.Empty(identity.Content.Headers.ContentEncoding);
        List<MultipartPart> parts = await ReadMultipartAsync(identity);
        Assert.Equal(2, parts.Count);
        Assert.Equal(_f.Js.AsSpan(100, 100).ToArray(), parts[1].Body);
    }

    [Theory]
    [InlineData(Transport.Http11, null)]
    [InlineData(Transport.Http11, "br")]
    [InlineData(Transport.H2Tls, "br")]
    public async Task A_date_If_Range_on_a_resource_with_coded_variants_gets_the_whole_representation(Transport transport, string? coding)
    {
        // The identity and its br variant share one Last-Modified: a client resuming with the date may hold the other
        // coding's bytes, so only the entity tag, one per coding, keeps the range (RFC 9110 13.1.5).
        void Accept(HttpRequestMessage r)
        {
            if (coding is not null)
            {
                r.Headers.AcceptEncoding.ParseAdd(coding);
            }
        }

        using HttpResponseMessage full = await _f.Host.SendAsync(transport, "/app.js", Accept);
        byte[] body = await full.Content.ReadAsByteArrayAsync();
        string date = full.Content.Headers.GetValues("Last-Modified").Single();
        EntityTagHeaderValue etag = full.Headers.ETag!;

        using HttpResponseMessage byDate = await _f.Host.SendAsync(transport, "/app.js", r =>
        {
            Accept(r);
            r.Headers.TryAddWithoutValidation("Range", "bytes=100-");
            r.Headers.TryAddWithoutValidation("If-Range", date);
        });
        Assert.Equal(HttpStatusCode.OK, byDate.StatusCode);
        Assert.Equal(body, await byDate.Content.ReadAsByteArrayAsync());

        using HttpResponseMessage byTag = await _f.Host.SendAsync(transport, "/app.js", r =>
        {
            Accept(r);
            r.Headers.TryAddWithoutValidation("Range", "bytes=100-");
            r.Headers.IfRange = new RangeConditionHeaderValue(etag);
        });
        Assert.Equal(HttpStatusCode.PartialContent, byTag.StatusCode);
        Assert.Equal(body.AsSpan(100).ToArray(), await byTag.Content.ReadAsByteArrayAsync());
    }

    [Theory]
    [InlineData(Transport.Http11)]
    [InlineData(Transport.H2Tls)]
    public async Task If_range_decides_between_the_parts_and_the_whole_file(Transport transport)
    {
        using HttpResponseMessage plain = await _f.Host.SendAsync(transport, "/large.bin");
        EntityTagHeaderValue etag = plain.Headers.ETag!;

        using HttpResponseMessage current = await _f.Host.SendAsync(transport, "/large.bin", r =>
        {
            r.Headers.TryAddWithoutValidation("Range", "bytes=0-9,20-29");
            r.Headers.IfRange = new RangeConditionHeaderValue(etag);
        });
        Assert.Equal(HttpStatusCode.PartialContent, current.StatusCode);
        Assert.Equal(2, (await ReadMultipartAsync(current)).Count);

        using HttpResponseMessage stale = await _f.Host.SendAsync(transport, "/large.bin", r =>
        {
            r.Headers.TryAddWithoutValidation("Range", "bytes=0-9,20-29");
            r.Headers.IfRange = new RangeConditionHeaderValue("\"another-version\"");
        });
        Assert.Equal(HttpStatusCode.OK, stale.StatusCode);
        Assert.Equal(_f.Large, await stale.Content.ReadAsByteArrayAsync());
    }

    public static TheoryData<string, long, long> Coalesced() => new()
    {
        // Overlapping and adjacent ranges become one, answered as a single-part 206.
        { "bytes=0-99,100-199,50-150", 0, 199 },
        { "bytes=0-9,20-29,5-24", 0, 29 },
        { "bytes=0-99,0-99", 0, 99 },
        // An unsatisfiable member is dropped; a huge last position means "to the end".
        { "bytes=0-1,99999999999999999999999-", 0, 1 },
        { "bytes=9990-99999999999999999999999,9000-9989", 9000, 9999 },
    };

    [Theory]
    [MemberData(nameof(Coalesced))]
    public async Task Overlapping_and_adjacent_ranges_are_coalesced(string range, long start, long end)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/small.bin", r => r.Headers.TryAddWithoutValidation("Range", range));
        Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
        Assert.Equal($"bytes {start}-{end}/{SmallLength}", response.Header("Content-Range"));
        Assert.Equal(_f.Small.AsSpan((int)start, (int)(end - start + 1)).ToArray(), await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Ranges_coalesced_in_part_are_sent_in_ascending_order()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.H2c, "/small.bin", r => r.Headers.TryAddWithoutValidation("Range", "bytes=100-109,0-9,105-119"));
        List<MultipartPart> parts = await ReadMultipartAsync(response);
        Assert.Equal(["bytes 0-9/10000", "bytes 100-119/10000"], parts.Select(p => p.ContentRange));
    }

    public static TheoryData<string, int> Hostile() => new()
    {
        // More bytes than the file (the CVE-2011-3192 shape): the whole file, once.
        { "bytes=0-,0-", 200 },
        { "bytes=" + string.Join(",", Enumerable.Repeat("0-9999", 3)), 200 },
        { "bytes=1-,0-", 200 },
        // Too many ranges (more than MaxRanges, 64 by default): the whole file.
        { "bytes=" + string.Join(",", Enumerable.Range(0, 2000).Select(i => $"{i * 3}-{i * 3}")), 200 },
        { "bytes=" + string.Join(",", Enumerable.Range(0, 65).Select(i => $"{i * 3}-{i * 3}")), 200 },
        // Malformed members (negative, descending, junk) make the header ignored.
        { "bytes=0-1,-5--3", 200 },
        { "bytes=0-1,5-1", 200 },
        { "bytes=0-1,x-y", 200 },
        { "bytes=0-1,-", 200 },
        // Nothing satisfiable: 416.
        { "bytes=99999999999999999999-,999999999999999999999999-", 416 },
        { "bytes=10000-,20000-30000", 416 },
    };

    [Theory]
    [MemberData(nameof(Hostile))]
    public async Task Hostile_range_sets_get_the_whole_file_or_416(string range, int status)
    {
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/small.bin", r => r.Headers.TryAddWithoutValidation("Range", range));
            Assert.Equal(status, (int)response.StatusCode);
            byte[] body = await response.Content.ReadAsByteArrayAsync();
            if (status == 200)
            {
                Assert.Null(response.Header("Content-Range"));
                Assert.Equal(_f.Small, body);
            }
            else
            {
                Assert.Equal($"bytes */{SmallLength}", response.Header("Content-Range"));
            }
        }
    }

    [Fact]
    public async Task Exactly_max_ranges_descending_are_all_served_in_order()
    {
        string range = "bytes=" + string.Join(",", Enumerable.Range(0, 64).Reverse().Select(i => $"{i * 100}-{(i * 100) + 9}"));
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.H2Tls, "/large.bin", r => r.Headers.TryAddWithoutValidation("Range", range));
        List<MultipartPart> parts = await ReadMultipartAsync(response);
        Assert.Equal(64, parts.Count);
        Assert.Equal($"bytes 6300-6309/{LargeLength}", parts[0].ContentRange);
        Assert.Equal(_f.Large.AsSpan(0, 10).ToArray(), parts[63].Body);
    }

    [Theory]
    [InlineData("--http1.1")]
    [InlineData("--http2-prior-knowledge")]
    [InlineData("--http2")]
    public async Task Curl_gets_the_parts(string protocol)
    {
        Uri baseUri = protocol == "--http2" ? _f.Host.Https : protocol == "--http1.1" ? _f.Host.Http : _f.Host.H2c;
        string body = Path.Combine(_f.Files.Root, $"curl-{Guid.NewGuid():N}.out");
        string output = await CurlClient.RunAsync(protocol, "-r", "0-9,5000-5009", "-o", body, "-w", "%{http_code} %{content_type}", new Uri(baseUri, "/large.bin").ToString());
        string[] fields = output.Split(' ', 2);
        Assert.Equal("206", fields[0]);
        string boundary = fields[1].Split("boundary=")[1];
        await using FileStream stream = File.OpenRead(body);
        List<MultipartPart> parts = await MultipartPart.ReadAsync(boundary, stream);
        Assert.Equal(_f.Large.AsSpan(0, 10).ToArray(), parts[0].Body);
        Assert.Equal(_f.Large.AsSpan(5000, 10).ToArray(), parts[1].Body);
        File.Delete(body);
    }

    private static async Task<List<MultipartPart>> ReadMultipartAsync(HttpResponseMessage response)
    {
        Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
        Assert.Null(response.Header("Content-Range"));
        MediaTypeHeaderValue type = response.Content.Headers.ContentType!;
        Assert.Equal("multipart/byteranges", type.MediaType);
        string boundary = type.Parameters.Single(p => p.Name == "boundary").Value!;
        byte[] body = await response.Content.ReadAsByteArrayAsync();
        // Content-Length was computed before a byte was sent: it must be the body's exact length.
        Assert.Equal(body.Length, response.Content.Headers.ContentLength);
        return await MultipartPart.ReadAsync(boundary, new MemoryStream(body));
    }

    // The test's own reading of the specs, for sets with no overlaps: in request order, unsatisfiable ones dropped.
    private static List<(long Start, long End)> ExpectedParts(string range, long length)
    {
        var parts = new List<(long, long)>();
        foreach (string spec in range["bytes=".Length..].Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries))
        {
            string[] ends = spec.Split('-');
            if (ends[0].Length == 0)
            {
                long suffix = long.Parse(ends[1], CultureInfo.InvariantCulture);
                parts.Add((length - suffix, length - 1));
                continue;
            }

            long first = long.Parse(ends[0], CultureInfo.InvariantCulture);
            long last = ends[1].Length == 0 ? length - 1 : Math.Min(length - 1, long.Parse(ends[1], CultureInfo.InvariantCulture));
            if (first < length)
            {
                parts.Add((first, last));
            }
        }

        return parts;
    }
}
