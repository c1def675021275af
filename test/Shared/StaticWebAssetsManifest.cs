using System.IO.Compression;
using System.Security.Cryptography;
using System.Text.Json;
using Microsoft.AspNetCore.StaticFiles;

namespace FastFiles.Testing;

/// <summary>
/// Writes the endpoints manifest that <c>MapStaticAssets</c> reads (<c>{app}.staticwebassets.endpoints.json</c>), in
/// the form <c>dotnet publish</c> produces it (a <c>Publish</c> manifest: a <c>Build</c> one makes MapStaticAssets send
/// <c>no-cache</c> everywhere): for every file an identity route
/// (<c>Cache-Control: no-cache</c>) and a fingerprinted route (<c>site.{fingerprint}.css</c>, immutable), each with a
/// gzip variant selected by <c>Accept-Encoding</c>, strong ETags and <c>integrity</c> from the content's SHA-256.
/// Gzip files are written beside the originals (<c>site.css.gz</c>), as publishing does.
/// </summary>
public static class StaticWebAssetsManifest
{
    private static readonly FileExtensionContentTypeProvider ContentTypes = new();

    /// <summary>One file's routes: the identity route and the fingerprinted one.</summary>
    public sealed record Asset(string Route, string FingerprintedRoute);

    /// <summary>
    /// Writes the manifest for every file under <paramref name="webRoot"/> to <paramref name="manifestPath"/>; with
    /// <paramref name="compress"/>, first writes each file's gzip variant beside it.
    /// </summary>
    public static IReadOnlyList<Asset> Write(string webRoot, string manifestPath, bool compress = true)
    {
        var assets = new List<Asset>();
        var endpoints = new List<object>();
        foreach (string file in Directory.EnumerateFiles(webRoot, "*", SearchOption.AllDirectories).Order(StringComparer.Ordinal).ToArray())
        {
            if (file.EndsWith(".gz", StringComparison.Ordinal) || !ContentTypes.TryGetContentType(file, out string? contentType))
            {
                continue;
            }

            string relative = Path.GetRelativePath(webRoot, file).Replace('\\', '/');
            byte[] content = File.ReadAllBytes(file);
            byte[] hash = SHA256.HashData(content);
            string fingerprint = Base36(hash)[..10];
            string extension = Path.GetExtension(relative);
            string fingerprinted = relative[..^extension.Length] + "." + fingerprint + extension;

            string etag = "\"" + Convert.ToBase64String(hash) + "\"";
            string integrity = "sha256-" + Convert.ToBase64String(hash);
            string lastModified = File.GetLastWriteTimeUtc(file).ToString("R", System.Globalization.CultureInfo.InvariantCulture);
            byte[] compressed = compress ? Compress(file, content) : [];
            string gzipEtag = "\"" + Convert.ToBase64String(SHA256.HashData(compressed)) + "\"";
            string quality = (1.0 / (compressed.Length + 1)).ToString("0.############", System.Globalization.CultureInfo.InvariantCulture);

            foreach ((string route, bool immutable) in new[] { (fingerprinted, true), (relative, false) })
            {
                string cacheControl = immutable ? "max-age=31536000, immutable" : "no-cache";
                var properties = new List<object> { Property("integrity", integrity) };
                if (immutable)
                {
                    properties.Insert(0, Property("fingerprint", fingerprint));
                    properties.Add(Property("label", relative));
                }

                if (compress)
                {
                    endpoints.Add(new
                    {
                        Route = route,
                        AssetFile = relative + ".gz",
                        Selectors = new[] { new { Name = "Content-Encoding", Value = "gzip", Quality = quality } },
                        ResponseHeaders = new[]
                        {
                            Property("Cache-Control", cacheControl),
                            Property("Content-Encoding", "gzip"),
                            Property("Content-Length", compressed.Length.ToString(System.Globalization.CultureInfo.InvariantCulture)),
                            Property("Content-Type", contentType),
                            Property("ETag", gzipEtag),
                            Property("Last-Modified", lastModified),
                            Property("Vary", "Accept-Encoding"),
                        },
                        EndpointProperties = properties.Append(Property("original-resource", etag)).ToArray(),
                    });
                }

                endpoints.Add(new
                {
                    Route = route,
                    AssetFile = relative,
                    Selectors = Array.Empty<object>(),
                    ResponseHeaders = new[]
                    {
                        Property("Cache-Control", cacheControl),
                        Property("Content-Length", content.Length.ToString(System.Globalization.CultureInfo.InvariantCulture)),
                        Property("Content-Type", contentType),
                        Property("ETag", etag),
                        Property("Last-Modified", lastModified),
                        Property("Vary", "Accept-Encoding"),
                    },
                    EndpointProperties = properties.ToArray(),
                });
            }

            assets.Add(new Asset("/" + relative, "/" + fingerprinted));
        }

        File.WriteAllText(manifestPath, JsonSerializer.Serialize(new { Version = 1, ManifestType = "Publish", Endpoints = endpoints }));
        return assets;
    }

    private static byte[] Compress(string file, byte[] content)
    {
        string gzipPath = file + ".gz";
        using (FileStream output = File.Create(gzipPath))
        using (var gzip = new GZipStream(output, CompressionLevel.SmallestSize))
        {
            gzip.Write(content);
        }

        File.SetLastWriteTimeUtc(gzipPath, File.GetLastWriteTimeUtc(file));
        return File.ReadAllBytes(gzipPath);
    }

    private static object Property(string name, string value) => new { Name = name, Value = value };

    private static string Base36(byte[] bytes)
    {
        const string Digits = "0123456789abcdefghijklmnopqrstuvwxyz";
        var value = new System.Numerics.BigInteger(bytes, isUnsigned: true);
        var text = new System.Text.StringBuilder();
        while (text.Length < 10)
        {
            text.Append(Digits[(int)(value % 36)]);
            value /= 36;
        }

        return text.ToString();
    }
}
