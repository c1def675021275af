using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.Testing;
using Microsoft.AspNetCore.Builder;

namespace FastFiles.FunctionalTests.StaticAssets;

/// <summary>
/// With a build's manifest, MapStaticAssets reloads an asset changed after the build (aspnetcore's runtime reload
/// handler: the file as it is now, with a new ETag and Last-Modified). <c>WithFastFiles()</c> must then answer as plain
/// MapStaticAssets does, not from the bytes it read on first use.
/// </summary>
public sealed class RuntimeReloadTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task A_changed_asset_under_a_build_manifest_is_answered_as_plain_MapStaticAssets_answers_it(bool appConvention)
    {
        string webRoot = Path.Combine(_files.Root, "wwwroot");
        byte[] v1 = Encoding.UTF8.GetBytes(string.Concat(Enumerable.Repeat("body { color: #123456; margin: 0 auto; }\n", 60)));
        _files.Write("wwwroot/css/site.css", v1);
        string manifest = Path.Combine(_files.Root, "app.staticwebassets.endpoints.json");
        StaticWebAssetsManifest.Write(webRoot, manifest, compress: false);
        File.WriteAllText(manifest, File.ReadAllText(manifest).Replace("\"ManifestType\":\"Publish\"", "\"ManifestType\":\"Build\"", StringComparison.Ordinal));

        await using TestHost plain = await TestHost.StartAsync(app => app.MapStaticAssets(manifest), webRoot: webRoot, contentRoot: _files.Root);
        await using TestHost fast = await TestHost.StartAsync(
            app =>
            {
                var assets = app.MapStaticAssets(manifest);
                if (appConvention)
                {
                    // An app's own wrapper between MapStaticAssets and WithFastFiles hides the reload handler's.
                    assets.Add(endpoint =>
                    {
                        Microsoft.AspNetCore.Http.RequestDelegate inner = endpoint.RequestDelegate!;
                        endpoint.RequestDelegate = context => inner(context);
                    });
                }

                assets.WithFastFiles();
            },
            webRoot: webRoot,
            contentRoot: _files.Root);
        foreach (TestHost host in new[] { plain, fast })
        {
            using HttpResponseMessage first = await host.SendAsync(Transport.Http11, "/css/site.css");
            Assert.Equal(v1, await first.Content.ReadAsByteArrayAsync());
        }

        byte[] v2 = Encoding.UTF8.GetBytes(string.Concat(Enumerable.Repeat("body { color: #abcdef; margin: 1px auto; }\n", 70)));
        _files.Write("wwwroot/css/site.css", v2);
        File.SetLastWriteTimeUtc(Path.Combine(webRoot, "css/site.css"), DateTime.UtcNow.AddMinutes(5));

        using HttpResponseMessage expected = await plain.SendAsync(Transport.Http11, "/css/site.css");
        using HttpResponseMessage actual = await fast.SendAsync(Transport.Http11, "/css/site.css");
        Assert.Equal(v2, await expected.Content.ReadAsByteArrayAsync());
        Assert.Equal(v2, await actual.Content.ReadAsByteArrayAsync());
        Assert.Equal(expected.Headers.ETag, actual.Headers.ETag);
        Assert.Equal(expected.Content.Headers.LastModified, actual.Content.Headers.LastModified);
        Assert.Equal(expected.Content.Headers.ContentLength, actual.Content.Headers.ContentLength);
    }
}
