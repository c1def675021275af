using System.Net;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.AspNetCore.StaticAssets;
using Microsoft.AspNetCore.Routing;

namespace FastFiles.FunctionalTests.StaticAssets;

/// <summary>
/// <c>MapStaticAssets().WithFastFiles()</c> against plain <c>MapStaticAssets()</c>, both on real Kestrel with an SDK-form
/// endpoints manifest: every response (status, headers except Date, body) must be identical, and only the accelerated
/// endpoints run with FastFiles' send path.
/// </summary>
public sealed class MapStaticAssetsTests : IClassFixture<MapStaticAssetsTests.Hosts>
{
    private const string FeatureHeader = "x-test-body-feature";
    private readonly Hosts _hosts;

    public MapStaticAssetsTests(Hosts hosts) => _hosts = hosts;

    public static TheoryData<Transport, string, string> Requests()
    {
        var data = new TheoryData<Transport, string, string>();
        foreach (Transport transport in TransportMatrix.Default)
        {
            foreach (string kind in new[] { "plain", "gzip", "fingerprinted", "fingerprinted-gzip", "head", "range", "not-modified", "if-match-fails", "large" })
            {
                data.Add(transport, kind, "/css/site.css");
            }

            data.Add(transport, "plain", "/img/logo.png");
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Requests))]
    public async Task Responses_are_identical_to_plain_MapStaticAssets(Transport transport, string kind, string path)
    {
        StaticWebAssetsManifest.Asset asset = _hosts.Assets.Single(a => a.Route == (kind == "large" ? "/js/app.js" : path));
        string target = kind.StartsWith("fingerprinted", StringComparison.Ordinal) ? asset.FingerprintedRoute : asset.Route;
        string? etag = null;
        if (kind is "not-modified" or "if-match-fails")
        {
            using HttpResponseMessage first = await _hosts.Plain.SendAsync(transport, target);
            etag = first.Headers.ETag!.ToString();
        }

        (HttpResponseMessage plain, byte[] plainBody) = await SendAsync(_hosts.Plain, transport, kind, target, etag);
        (HttpResponseMessage fast, byte[] fastBody) = await SendAsync(_hosts.Accelerated, transport, kind, target, etag);
        using (plain)
        using (fast)
        {
            Assert.Equal(plain.StatusCode, fast.StatusCode);
            Assert.Equal(HeadersOf(plain), HeadersOf(fast));
            Assert.Equal(plainBody, fastBody);
            HttpStatusCode expected = kind switch
            {
                "range" => HttpStatusCode.PartialContent,
                "not-modified" => HttpStatusCode.NotModified,
                "if-match-fails" => HttpStatusCode.PreconditionFailed,
                _ => HttpStatusCode.OK,
            };
            Assert.Equal(expected, fast.StatusCode);
            if (kind.EndsWith("gzip", StringComparison.Ordinal))
            {
                Assert.Equal("gzip", fast.Header("Content-Encoding"));
            }

            if (expected == HttpStatusCode.OK && kind != "head")
            {
                // A small asset's plain GET is answered from memory, without MapStaticAssets' SendFileAsync; a larger one
                // runs the endpoint, whose SendFileAsync is FastFiles' on the accelerated host only.
                Assert.NotEqual("FastSendFileFeature", plain.Header(FeatureHeader));
                Assert.NotNull(fast.Header(FeatureHeader));
                Assert.Equal(kind == "large" || path == "/img/logo.png", fast.Header(FeatureHeader) == "FastSendFileFeature");
            }

            if (kind == "range")
            {
                Assert.Equal("FastSendFileFeature", fast.Header(FeatureHeader));
            }
        }
    }

    /// <summary>
    /// Requests the memory answer must leave to the endpoint, and the endpoint must answer as plain MapStaticAssets does:
    /// every other method, HEAD, single, multiple, overlapping and unsatisfiable ranges (also on a coded variant and on an
    /// empty asset), If-Range with tags and dates, If-None-Match with weak, strong, listed and <c>*</c> tags, failing
    /// If-Match and If-Unmodified-Since, and routes with a query. HTTP/1.1 is compared on the wire (every header line in
    /// order, except Date and the test's probe) on both plaintext endpoints (with and without the zero-copy send path).
    /// </summary>
    [Theory]
    [Transports]
    public async Task Preconditions_ranges_and_methods_are_answered_as_plain_MapStaticAssets_answers_them(Transport transport)
    {
        StaticWebAssetsManifest.Asset css = _hosts.Assets.Single(a => a.Route == "/css/site.css");
        var cases = new List<(string Method, string Target, string Headers)>();
        foreach (string target in new[] { css.Route, css.FingerprintedRoute + "?v=1", "/empty.txt", "/js/app.js" })
        {
            using HttpResponseMessage first = await _hosts.Plain.SendAsync(Transport.Http11, target);
            string etag = first.Headers.ETag!.ToString();
            DateTimeOffset modified = first.Content.Headers.LastModified!.Value;
            string lastModified = ResponseHeaders.HttpDate(modified);
            string earlier = ResponseHeaders.HttpDate(modified.AddDays(-1));
            string later = ResponseHeaders.HttpDate(modified.AddSeconds(30));
            foreach (string headers in new[]
            {
                "Range: bytes=0-0\r\n", "Range: bytes=0-0,2-3\r\n", "Range: bytes=0-5,3-8\r\n", "Range: bytes=5000000-\r\n",
                "Range: bytes=0-0,5000000-\r\n", "Range: bytes=-0\r\n", "Range: bytes=-5\r\n", "Range: bytes=0-\r\n", "Range: bytes=9-3\r\n", "Range: items=0-1\r\n",
                $"Range: bytes=1-3\r\nIf-Range: {etag}\r\n", $"Range: bytes=1-3\r\nIf-Range: W/{etag}\r\n", "Range: bytes=1-3\r\nIf-Range: \"other\"\r\n",
                $"Range: bytes=1-3\r\nIf-Range: {lastModified}\r\n", $"Range: bytes=1-3\r\nIf-Range: {earlier}\r\n", $"Range: bytes=1-3\r\nIf-Range: {later}\r\n",
                $"If-None-Match: {etag}\r\n", $"If-None-Match: W/{etag}\r\n", $"If-None-Match: \"other\", {etag}\r\n", "If-None-Match: *\r\n", "If-None-Match: \"other\"\r\n",
                $"If-None-Match: {etag}\r\nRange: bytes=0-3\r\n", $"If-Match: {etag}\r\n", $"If-Match: W/{etag}\r\n", "If-Match: *\r\n", "If-Match: \"other\"\r\n",
                "If-Match: \"other\"\r\nRange: bytes=0-3\r\n", $"If-Unmodified-Since: {earlier}\r\n", $"If-Unmodified-Since: {lastModified}\r\n",
                $"If-Modified-Since: {lastModified}\r\n", $"If-Modified-Since: {earlier}\r\n",
                "Accept-Encoding: gzip\r\nRange: bytes=0-9\r\n", "Accept-Encoding: gzip\r\nRange: bytes=0-0,5-9\r\n", "Accept-Encoding: gzip\r\nRange: bytes=9999999-\r\n",
                $"Accept-Encoding: gzip\r\nIf-None-Match: {etag}\r\n", "Accept-Encoding: gzip;q=0\r\n", "Accept-Encoding: br\r\n",
            })
            {
                cases.Add(("GET", target, headers));
            }

            foreach (string method in new[] { "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH" })
            {
                cases.Add((method, target, string.Empty));
            }

            cases.Add(("HEAD", target, "Range: bytes=0-3\r\n"));
            cases.Add(("HEAD", target, $"If-None-Match: {etag}\r\n"));
            cases.Add(("HEAD", target, "Accept-Encoding: gzip\r\n"));
        }

        var differences = new List<string>();
        foreach ((string method, string target, string headers) in cases)
        {
            if (transport == Transport.Http11)
            {
                foreach (Func<TestHost, Uri> endpoint in new Func<TestHost, Uri>[] { h => h.Http, h => h.HttpCopy })
                {
                    string plain = await WireAsync(endpoint(_hosts.Plain), method, target, headers);
                    string fast = await WireAsync(endpoint(_hosts.Accelerated), method, target, headers);
                    if (plain != fast)
                    {
                        differences.Add($"{method} {target} {headers.Replace("\r\n", "; ", StringComparison.Ordinal)} on {endpoint(_hosts.Plain).Port}:\n{plain}\n---\n{fast}");
                    }
                }
            }
            else
            {
                string plain = await DescribeAsync(_hosts.Plain, transport, method, target, headers);
                string fast = await DescribeAsync(_hosts.Accelerated, transport, method, target, headers);
                if (plain != fast)
                {
                    differences.Add($"{method} {target} {headers.Replace("\r\n", "; ", StringComparison.Ordinal)}:\n{plain}\n---\n{fast}");
                }
            }
        }

        Assert.True(differences.Count == 0, string.Join("\n\n", differences));
    }

    // An asset's routes (here the plain and the fingerprinted one) answer from one copy of its bytes, not one each.
    [Fact]
    public async Task The_routes_of_one_asset_share_its_bytes_in_memory()
    {
        StaticWebAssetsManifest.Asset asset = _hosts.Assets.Single(a => a.Route == "/css/site.css");
        foreach (string target in new[] { asset.Route, asset.FingerprintedRoute })
        {
            using HttpResponseMessage response = await _hosts.Accelerated.SendAsync(Transport.Http11, target);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(_hosts.SiteCss, await response.Content.ReadAsByteArrayAsync());
        }

        byte[][] held = _hosts.Accelerated.Services.GetRequiredService<EndpointDataSource>().Endpoints
            .Where(e => e.Metadata.GetMetadata<StaticAssetDescriptor>() is { AssetPath: "css/site.css" } d && d.Selectors.Count == 0)
            .Select(e => FastFiles.Hosting.StaticAssetMemoryResponder.BytesOf(InsideProbe(e.RequestDelegate!)))
            .OfType<byte[]>()
            .ToArray();
        Assert.Equal(2, held.Length);
        Assert.Same(held[0], held[1]);
    }

    // The delegate RecordBodyFeature wraps (the one WithFastFiles made).
    private static RequestDelegate InsideProbe(RequestDelegate probe)
        => probe.Target!.GetType().GetFields(System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.NonPublic)
            .Select(f => f.GetValue(probe.Target)).OfType<RequestDelegate>().Single();

    /// <summary>
    /// A manifest whose endpoints carry no Last-Modified (one not written by the SDK): MapStaticAssets still sends
    /// its default date, on GET and HEAD alike, and the answer from memory must too.
    /// </summary>
    [Theory]
    [Transports]
    public async Task An_asset_without_Last_Modified_in_its_manifest_is_answered_as_plain_MapStaticAssets_answers_it(Transport transport)
    {
        using var files = new TestFiles();
        string webRoot = Path.Combine(files.Root, "wwwroot");
        files.Write("wwwroot/css/site.css", _hosts.SiteCss);
        string manifest = Path.Combine(files.Root, "app.staticwebassets.endpoints.json");
        StaticWebAssetsManifest.Write(webRoot, manifest, compress: false);
        File.WriteAllText(manifest, System.Text.RegularExpressions.Regex.Replace(File.ReadAllText(manifest), ",?\\{\"Name\":\"Last-Modified\",\"Value\":\"[^\"]*\"\\}", string.Empty));
        Assert.DoesNotContain("Last-Modified", File.ReadAllText(manifest), StringComparison.Ordinal);
        await using TestHost plain = await TestHost.StartAsync(app => app.MapStaticAssets(manifest), webRoot: webRoot, contentRoot: files.Root);
        await using TestHost fast = await TestHost.StartAsync(app => app.MapStaticAssets(manifest).WithFastFiles(), webRoot: webRoot, contentRoot: files.Root);
        foreach (HttpMethod method in new[] { HttpMethod.Get, HttpMethod.Head })
        {
            string expected = await DescribeAsync(plain, transport, method.Method, "/css/site.css", string.Empty);
            string actual = await DescribeAsync(fast, transport, method.Method, "/css/site.css", string.Empty);
            Assert.Equal(expected, actual);
        }
    }

    // The response as it came off the wire, Date and the test's body-feature probe left out, with its body's hash.
    private static async Task<string> WireAsync(Uri endpoint, string method, string target, string headers)
    {
        using Socket socket = await RawHttp.ConnectAsync(endpoint);
        await socket.SendAsync(Encoding.Latin1.GetBytes($"{method} {target} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"));
        using var stream = new NetworkStream(socket, ownsSocket: false);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var received = new MemoryStream();
        await RawHttp.ReadToEndAsync(stream, received, timeout.Token);
        string text = Encoding.Latin1.GetString(received.ToArray());
        int end = text.IndexOf("\r\n\r\n", StringComparison.Ordinal);
        string head = string.Join("\n", (end < 0 ? text : text[..end]).Split("\r\n").Where(line => !line.StartsWith("Date:", StringComparison.Ordinal) && !line.StartsWith(FeatureHeader + ":", StringComparison.Ordinal)));
        byte[] body = end < 0 ? [] : received.ToArray()[(end + 4)..];
        return head + "\nbody " + body.Length + " " + TestFiles.Sha256(body);
    }

    private static async Task<string> DescribeAsync(TestHost host, Transport transport, string method, string target, string headers)
    {
        using HttpResponseMessage response = await host.SendAsync(transport, target, request =>
        {
            foreach (string line in headers.Split("\r\n", StringSplitOptions.RemoveEmptyEntries))
            {
                int colon = line.IndexOf(':', StringComparison.Ordinal);
                request.Headers.TryAddWithoutValidation(line[..colon], line[(colon + 1)..].Trim());
            }
        }, new HttpMethod(method));
        byte[] body = await response.Content.ReadAsByteArrayAsync();
        return (int)response.StatusCode + "\n" + HeadersOf(response) + "\nbody " + body.Length + " " + TestFiles.Sha256(body);
    }

    [Fact]
    public async Task Fingerprinted_routes_keep_integrity_and_immutable_caching()
    {
        StaticWebAssetsManifest.Asset asset = _hosts.Assets.Single(a => a.Route == "/css/site.css");
        using HttpResponseMessage response = await _hosts.Accelerated.SendAsync(Transport.H2Tls, asset.FingerprintedRoute);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("max-age=31536000, immutable", response.Header("Cache-Control"));
        Assert.Equal(_hosts.SiteCss, await response.Content.ReadAsByteArrayAsync());
        Assert.Equal("\"" + Convert.ToBase64String(System.Security.Cryptography.SHA256.HashData(_hosts.SiteCss)) + "\"", response.Header("ETag"));
    }

    private static async Task<(HttpResponseMessage, byte[])> SendAsync(TestHost host, Transport transport, string kind, string target, string? etag)
    {
        HttpResponseMessage response = await host.SendAsync(transport, target, request =>
        {
            if (kind.EndsWith("gzip", StringComparison.Ordinal))
            {
                request.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip, deflate");
            }

            if (kind == "range")
            {
                request.Headers.TryAddWithoutValidation("Range", "bytes=10-99");
            }

            if (kind == "not-modified")
            {
                request.Headers.TryAddWithoutValidation("If-None-Match", etag);
            }

            if (kind == "if-match-fails")
            {
                request.Headers.TryAddWithoutValidation("If-Match", "\"other\"");
            }
        }, kind == "head" ? HttpMethod.Head : null);
        return (response, await response.Content.ReadAsByteArrayAsync());
    }

    private static string HeadersOf(HttpResponseMessage response)
        => string.Join("\n", response.Headers.NonValidated.Concat(response.Content.Headers.NonValidated)
            .Where(h => h.Key is not ("Date" or FeatureHeader))
            .Select(h => h.Key + ": " + string.Join(", ", h.Value))
            .Order(StringComparer.Ordinal));

    public sealed class Hosts : IAsyncLifetime
    {
        private readonly TestFiles _files = new();

        public TestHost Plain { get; private set; } = null!;

        public TestHost Accelerated { get; private set; } = null!;

        public IReadOnlyList<StaticWebAssetsManifest.Asset> Assets { get; private set; } = [];

        public byte[] SiteCss { get; } = Encoding.UTF8.GetBytes(string.Concat(Enumerable.Repeat("body { color: #123456; margin: 0 auto; }\n", 60)));

        public async Task InitializeAsync()
        {
            string webRoot = Path.Combine(_files.Root, "wwwroot");
            _files.Write("wwwroot/css/site.css", SiteCss);
            _files.Write("wwwroot/js/app.js", Encoding.UTF8.GetBytes(string.Concat(Enumerable.Range(0, 4000).Select(i => $"console.log({i});\n"))));
            _files.Create("wwwroot/img/logo.png", 70_000);
            _files.Write("wwwroot/empty.txt", []);
            string manifest = Path.Combine(_files.Root, "app.staticwebassets.endpoints.json");
            Assets = StaticWebAssetsManifest.Write(webRoot, manifest);

            Plain = await TestHost.StartAsync(app => app.MapStaticAssets(manifest).Add(RecordBodyFeature), webRoot: webRoot, contentRoot: _files.Root);
            Accelerated = await TestHost.StartAsync(
                app =>
                {
                    var assets = app.MapStaticAssets(manifest);
                    assets.WithFastFiles();
                    assets.Add(RecordBodyFeature);
                },
                webRoot: webRoot,
                contentRoot: _files.Root);
        }

        public async Task DisposeAsync()
        {
            await Plain.DisposeAsync();
            await Accelerated.DisposeAsync();
            _files.Dispose();
        }

        // Wraps the endpoint after WithFastFiles (a convention added before it would keep answers from memory off), and
        // names the body feature in use when the response starts: FastFiles' when the endpoint's SendFileAsync started it.
        private static void RecordBodyFeature(EndpointBuilder endpoint)
        {
            RequestDelegate inner = endpoint.RequestDelegate!;
            endpoint.RequestDelegate = context =>
            {
                context.Response.OnStarting(
                    static state =>
                    {
                        var started = (HttpContext)state;
                        started.Response.Headers[FeatureHeader] = started.Features.GetRequiredFeature<IHttpResponseBodyFeature>().GetType().Name;
                        return Task.CompletedTask;
                    },
                    context);
                return inner(context);
            };
        }
    }
}
