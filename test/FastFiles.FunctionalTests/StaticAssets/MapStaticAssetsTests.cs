using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;

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
                // A small asset's plain GET is answered from memory, before the endpoint (and this probe inside it);
                // a larger one runs the endpoint, whose SendFileAsync is FastFiles' on the accelerated host only.
                Assert.NotEqual("FastSendFileFeature", plain.Header(FeatureHeader));
                Assert.Equal(kind == "large" || path == "/img/logo.png" ? "FastSendFileFeature" : null, fast.Header(FeatureHeader));
            }

            if (kind == "range")
            {
                Assert.Equal("FastSendFileFeature", fast.Header(FeatureHeader));
            }
        }
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
            string manifest = Path.Combine(_files.Root, "app.staticwebassets.endpoints.json");
            Assets = StaticWebAssetsManifest.Write(webRoot, manifest);

            Plain = await TestHost.StartAsync(app => app.MapStaticAssets(manifest).Add(RecordBodyFeature), webRoot: webRoot, contentRoot: _files.Root);
            Accelerated = await TestHost.StartAsync(
                app =>
                {
                    var assets = app.MapStaticAssets(manifest);
                    assets.Add(RecordBodyFeature);
                    assets.WithFastFiles();
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

        // Runs inside the endpoint (conventions apply in order, so WithFastFiles wraps this), and names the body
        // feature the endpoint's SendFileAsync will use.
        private static void RecordBodyFeature(EndpointBuilder endpoint)
        {
            RequestDelegate inner = endpoint.RequestDelegate!;
            endpoint.RequestDelegate = context =>
            {
                context.Response.Headers[FeatureHeader] = context.Features.GetRequiredFeature<IHttpResponseBodyFeature>().GetType().Name;
                return inner(context);
            };
        }
    }
}
