using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.FunctionalTests.StaticAssets;

/// <summary>
/// <c>WithFastFiles()</c> among other parts of an app: what an app's convention added before it does runs for every
/// request (a small asset's plain GET was answered from memory, past an access check the convention made), and a body
/// a middleware above replaces gets MapStaticAssets' own writes (response compression made other bytes of the answer
/// from memory, and no coding at all of an empty asset).
/// </summary>
public sealed class ConventionOrderTests : IDisposable
{
    private readonly TestFiles _files = new();
    private readonly string _webRoot;
    private readonly string _manifest;

    public ConventionOrderTests()
    {
        _webRoot = Path.Combine(_files.Root, "wwwroot");
        _files.Write("wwwroot/css/site.css", Encoding.UTF8.GetBytes(string.Concat(Enumerable.Repeat("body { color: #123456; margin: 0 auto; }\n", 60))));
        _files.Write("wwwroot/data/secret.txt", Encoding.UTF8.GetBytes("only with the key\n"));
        _files.Write("wwwroot/empty.txt", []);
        _manifest = Path.Combine(_files.Root, "app.staticwebassets.endpoints.json");
        StaticWebAssetsManifest.Write(_webRoot, _manifest);
    }

    public void Dispose() => _files.Dispose();

    // An app's own convention: a header on every asset, and a 403 for /data/ without the key.
    private static void Guard(EndpointBuilder endpoint)
    {
        RequestDelegate inner = endpoint.RequestDelegate!;
        endpoint.RequestDelegate = context =>
        {
            context.Response.Headers["X-Frame-Options"] = "DENY";
            if (context.Request.Path.StartsWithSegments("/data") && context.Request.Headers["X-Key"] != "secret")
            {
                context.Response.StatusCode = StatusCodes.Status403Forbidden;
                return Task.CompletedTask;
            }

            return inner(context);
        };
    }

    [Theory]
    [Transports]
    public async Task A_convention_added_before_WithFastFiles_runs_for_every_request(Transport transport)
    {
        await using TestHost fast = await TestHost.StartAsync(
            app =>
            {
                var assets = app.MapStaticAssets(_manifest);
                assets.Add(Guard);
                assets.WithFastFiles();
            },
            webRoot: _webRoot,
            contentRoot: _files.Root);

        // Twice: the first request of an asset reads its bytes, later ones could be answered from them.
        for (int i = 0; i < 2; i++)
        {
            using HttpResponseMessage refused = await fast.SendAsync(transport, "/data/secret.txt");
            Assert.Equal(HttpStatusCode.Forbidden, refused.StatusCode);
            Assert.Empty(await refused.Content.ReadAsByteArrayAsync());

            using HttpResponseMessage allowed = await fast.SendAsync(transport, "/data/secret.txt", r => r.Headers.Add("X-Key", "secret"));
            Assert.Equal(HttpStatusCode.OK, allowed.StatusCode);
            Assert.Equal("only with the key\n", await allowed.Content.ReadAsStringAsync());

            using HttpResponseMessage css = await fast.SendAsync(transport, "/css/site.css");
            Assert.Equal(HttpStatusCode.OK, css.StatusCode);
            Assert.Equal(["DENY"], css.Headers.GetValues("X-Frame-Options"));
        }
    }

    [Theory]
    [InlineData("/css/site.css")]
    [InlineData("/empty.txt")]
    public async Task Through_response_compression_the_answer_is_plain_MapStaticAssets_answer(string path)
    {
        Action<IServiceCollection> services = s => s.AddResponseCompression();
        await using TestHost plain = await TestHost.StartAsync(app => { app.UseResponseCompression(); app.MapStaticAssets(_manifest); }, services, webRoot: _webRoot, contentRoot: _files.Root);
        await using TestHost fast = await TestHost.StartAsync(app => { app.UseResponseCompression(); app.MapStaticAssets(_manifest).WithFastFiles(); }, services, webRoot: _webRoot, contentRoot: _files.Root);

        // br: the manifest has gzip variants only, so the identity asset is selected and the middleware compresses it.
        for (int i = 0; i < 2; i++)
        {
            Assert.Equal(await DescribeAsync(plain, path), await DescribeAsync(fast, path));
        }
    }

    private static async Task<string> DescribeAsync(TestHost host, string path)
    {
        using HttpResponseMessage response = await host.SendAsync(Transport.Http11, path, r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br"));
        byte[] body = await response.Content.ReadAsByteArrayAsync();
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        return $"Content-Encoding={string.Join(",", response.Content.Headers.ContentEncoding)} Content-Length={response.Content.Headers.ContentLength} body={body.Length} {TestFiles.Sha256(body)}";
    }
}
