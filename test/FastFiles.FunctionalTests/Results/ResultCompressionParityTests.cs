using System.Diagnostics;
using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.FunctionalTests.StaticFiles;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Results;

/// <summary>
/// <c>FastResults.File</c> with dynamic compression and content-hash ETags answers exactly as <c>UseFastFiles</c> with the
/// same options: for the same file and request, the same status, headers (except Date) and bytes, over HTTP/1.1, h2c and
/// h2 over TLS. Each pair of endpoints has its own file cache, so each side compresses and hashes on its own.
/// </summary>
public sealed class ResultCompressionParityTests(ResultCompressionParityTests.Fixture fixture) : IClassFixture<ResultCompressionParityTests.Fixture>
{
    private readonly Fixture _f = fixture;

    /// <summary>URL prefixes of the middleware and of the result endpoint, per option set.</summary>
    public static readonly (string Middleware, string Result)[] Pairs =
    [
        ("/mw-hash", "/res-hash"),   // compression and content-hash ETags
        ("/mw-time", "/res-time"),   // compression with modification-time ETags
    ];

    public sealed class Fixture : HostFixture
    {
        protected override async Task<TestHost> StartHostAsync()
        {
            // app.css is held by the content cache; big.js (over MaxCachedFileSize) is hashed and compressed from disk.
            Files.Write("app.css", DynamicCompressionTests.Text(60_000, 11));
            Files.Write("big.js", DynamicCompressionTests.Text(300_000, 12));
            foreach (Transport transport in TransportMatrix.Default)
            {
                Files.Write($"changing-{transport}.css", DynamicCompressionTests.Text(20_000, 13));
            }

            // Not compressed: a type outside the compressible list, and a stylesheet under the 1 KiB minimum.
            Files.Create("photo.png", 5_000);
            Files.Write("tiny.css", DynamicCompressionTests.Text(500, 15));
            string root = Files.Root;
            return await TestHost.StartAsync(app =>
            {
                foreach (bool hash in new[] { true, false })
                {
                    (string middleware, string result) = Pairs[hash ? 0 : 1];
                    app.UseFastFiles(new FastStaticFileOptions
                    {
                        FileProvider = new PhysicalFileProvider(root),
                        RequestPath = middleware,
                        EnableDynamicCompression = true,
                        EnableContentHashETags = hash,
                    });
                    app.MapGet(result + "/{**path}", (string path) => FastResults.File(root, path, enableDynamicCompression: true, enableContentHashETags: hash));
                }
            });
        }
    }

    [Theory]
    [Transports]
    public async Task Identity_br_and_gzip_match_the_middleware(Transport transport)
    {
        foreach ((string middleware, string result) in Pairs)
        {
            foreach (string file in new[] { "/app.css", "/big.js" })
            {
                foreach (string coding in new[] { "br", "gzip", "identity" })
                {
                    await SettleAsync(transport, middleware + file, coding);
                    await SettleAsync(transport, result + file, coding);
                    (HttpStatusCode status, string headers, byte[] body) = await AssertSameAsync(transport, middleware, result, file, $"Accept-Encoding: {coding}");
                    Assert.Equal(HttpStatusCode.OK, status);
                    Assert.Contains("Vary: Accept-Encoding", headers);
                    Assert.Equal(coding == "identity" ? null : coding, Field(headers, "Content-Encoding"));
                    Assert.Equal(File.ReadAllBytes(_f.Files.PathOf(file)), Compression.Decode(coding == "identity" ? string.Empty : coding, body));
                }

                // No Accept-Encoding at all: identity, with the same Vary.
                (_, string plain, _) = await AssertSameAsync(transport, middleware, result, file);
                Assert.Null(Field(plain, "Content-Encoding"));
            }
        }
    }

    [Theory]
    [Transports]
    public async Task Files_that_are_not_compressed_match_the_middleware(Transport transport)
    {
        foreach ((string middleware, string result) in Pairs)
        {
            foreach (string file in new[] { "/photo.png", "/tiny.css" })
            {
                (HttpStatusCode status, string headers, byte[] body) = await AssertSameAsync(transport, middleware, result, file, "Accept-Encoding: br, gzip");
                Assert.Equal(HttpStatusCode.OK, status);
                Assert.Null(Field(headers, "Content-Encoding"));

                // Nothing varies for a file that never gets variants (RFC 9110 12.5.5).
                Assert.Null(Field(headers, "Vary"));
                Assert.Equal(File.ReadAllBytes(_f.Files.PathOf(file)), body);
            }
        }
    }

    [Theory]
    [Transports]
    public async Task Ranges_of_a_compressed_variant_match_the_middleware(Transport transport)
    {
        foreach ((string middleware, string result) in Pairs)
        {
            await SettleAsync(transport, middleware + "/app.css", "br");
            await SettleAsync(transport, result + "/app.css", "br");
            (HttpStatusCode single, string headers, byte[] part) = await AssertSameAsync(transport, middleware, result, "/app.css", "Accept-Encoding: br", "Range: bytes=10-99");
            Assert.Equal(HttpStatusCode.PartialContent, single);
            Assert.Equal(90, part.Length);
            Assert.Equal("br", Field(headers, "Content-Encoding"));
            Assert.StartsWith("bytes 10-99/", Field(headers, "Content-Range"));

            // Several ranges of a variant: the whole variant.
            (HttpStatusCode multi, string multiHeaders, _) = await AssertSameAsync(transport, middleware, result, "/app.css", "Accept-Encoding: br", "Range: bytes=0-9,200-299");
            Assert.Equal(HttpStatusCode.OK, multi);
            Assert.Equal("br", Field(multiHeaders, "Content-Encoding"));
            Assert.Null(Field(multiHeaders, "Content-Range"));

            // If-Range with the variant's own tag keeps the range.
            string? etag = Field(headers, "ETag");
            Assert.NotNull(etag);
            (HttpStatusCode kept, _, _) = await AssertSameAsync(transport, middleware, result, "/app.css", "Accept-Encoding: br", "Range: bytes=0-9", $"If-Range: {etag}");
            Assert.Equal(HttpStatusCode.PartialContent, kept);
        }
    }

    [Theory]
    [Transports]
    public async Task If_None_Match_with_each_codings_tag_matches_the_middleware(Transport transport)
    {
        (string middleware, string result) = Pairs[0];
        foreach (string file in new[] { "/app.css", "/big.js" })
        {
            foreach (string coding in new[] { "br", "gzip", "identity" })
            {
                await SettleAsync(transport, middleware + file, coding);
                await SettleAsync(transport, result + file, coding);
                (_, string headers, _) = await AssertSameAsync(transport, middleware, result, file, $"Accept-Encoding: {coding}");
                string etag = Field(headers, "ETag")!;

                // The content hash of the bytes sent: 128 bits of SHA-256, base64url, quoted.
                Assert.Matches("^\"[A-Za-z0-9_-]{22}\"$", etag);
                (HttpStatusCode status, string notModified, byte[] body) = await AssertSameAsync(transport, middleware, result, file, $"Accept-Encoding: {coding}", $"If-None-Match: {etag}");
                Assert.Equal(HttpStatusCode.NotModified, status);
                Assert.Empty(body);
                Assert.Equal(etag, Field(notModified, "ETag"));
            }
        }
    }

    [Theory]
    [Transports]
    public async Task A_file_changed_between_requests_is_served_new_by_both(Transport transport)
    {
        string file = $"/changing-{transport}.css";
        foreach ((string middleware, string result) in Pairs)
        {
            await SettleAsync(transport, middleware + file, "br");
            await SettleAsync(transport, result + file, "br");
        }

        (_, string before, _) = await AssertSameAsync(transport, Pairs[0].Middleware, Pairs[0].Result, file, "Accept-Encoding: br");
        byte[] changed = DynamicCompressionTests.Text(25_000, 14);
        _f.Files.Write(file, changed);

        foreach ((string middleware, string result) in Pairs)
        {
            foreach (string coding in new[] { "identity", "br", "gzip" })
            {
                await SettleAsync(transport, middleware + file, coding, changed);
                await SettleAsync(transport, result + file, coding, changed);
                (HttpStatusCode status, string headers, byte[] body) = await AssertSameAsync(transport, middleware, result, file, $"Accept-Encoding: {coding}");
                Assert.Equal(HttpStatusCode.OK, status);
                Assert.Equal(changed, Compression.Decode(coding == "identity" ? string.Empty : coding, body));
                if (coding == "br" && middleware == Pairs[0].Middleware)
                {
                    // The old variant's tag is not the new one's, and it no longer matches.
                    string oldTag = Field(before, "ETag")!;
                    Assert.NotEqual(oldTag, Field(headers, "ETag"));
                    (HttpStatusCode revalidated, _, _) = await AssertSameAsync(transport, middleware, result, file, "Accept-Encoding: br", $"If-None-Match: {oldTag}");
                    Assert.Equal(HttpStatusCode.OK, revalidated);
                }
            }
        }
    }

    // Sends the same request to both endpoints and asserts the same status, headers except Date, and bytes.
    private async Task<(HttpStatusCode Status, string Headers, byte[] Body)> AssertSameAsync(Transport transport, string middleware, string result, string file, params string[] headers)
    {
        (HttpStatusCode status, string expectedHeaders, byte[] expectedBody) = await SendAsync(transport, middleware + file, headers);
        (HttpStatusCode resultStatus, string actualHeaders, byte[] actualBody) = await SendAsync(transport, result + file, headers);
        Assert.Equal(status, resultStatus);
        if (expectedHeaders.Contains("multipart/byteranges", StringComparison.Ordinal))
        {
            // The boundary is random per response; everything else must match.
            string boundary = Field(expectedHeaders, "Content-Type")!.Split("boundary=")[1];
            string resultBoundary = Field(actualHeaders, "Content-Type")!.Split("boundary=")[1];
            actualHeaders = actualHeaders.Replace(resultBoundary, boundary, StringComparison.Ordinal);
            actualBody = System.Text.Encoding.Latin1.GetBytes(System.Text.Encoding.Latin1.GetString(actualBody).Replace(resultBoundary, boundary, StringComparison.Ordinal));
        }

        Assert.Equal(expectedHeaders, actualHeaders);
        Assert.Equal(expectedBody, actualBody);
        return (status, expectedHeaders, expectedBody);
    }

    private async Task<(HttpStatusCode Status, string Headers, byte[] Body)> SendAsync(Transport transport, string path, string[] headers)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, path, r =>
        {
            foreach (string header in headers)
            {
                string[] parts = header.Split(": ", 2);
                r.Headers.TryAddWithoutValidation(parts[0], parts[1]);
            }
        });
        IEnumerable<string> fields = response.Headers.Concat(response.Content.Headers)
            .Where(h => !h.Key.Equals("Date", StringComparison.OrdinalIgnoreCase))
            .Select(h => $"{h.Key}: {string.Join(", ", h.Value)}")
            .Order(StringComparer.Ordinal);
        return (response.StatusCode, string.Join("\n", fields), await response.Content.ReadAsByteArrayAsync());
    }

    private static string? Field(string headers, string name)
        => headers.Split('\n').FirstOrDefault(l => l.StartsWith(name + ": ", StringComparison.OrdinalIgnoreCase))?[(name.Length + 2)..];

    // Polls (bounded) until the endpoint sends the coding asked for, with its ETag (a content hash of a large file is
    // made in the background), and, when given, bytes that decode to expected: each side's cache settles on its own.
    private async Task SettleAsync(Transport transport, string path, string coding, byte[]? expected = null)
    {
        Stopwatch waited = Stopwatch.StartNew();
        while (true)
        {
            (HttpStatusCode status, string headers, byte[] body) = await SendAsync(transport, path, [$"Accept-Encoding: {coding}"]);
            string sent = Field(headers, "Content-Encoding") ?? "identity";
            if (status == HttpStatusCode.OK && sent == coding && Field(headers, "ETag") is not null
                && (expected is null || expected.AsSpan().SequenceEqual(Compression.Decode(sent == "identity" ? string.Empty : sent, body))))
            {
                return;
            }

            Assert.True(waited.Elapsed < TimeSpan.FromSeconds(30), $"{path} did not settle on {coding}: {status} {headers}");
            await Task.Delay(20);
        }
    }
}
