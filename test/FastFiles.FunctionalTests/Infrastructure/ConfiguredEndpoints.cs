using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Configuration;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>
/// An app whose endpoints come from configuration, as a deployed app's do: <c>Kestrel:Endpoints:Secure</c> (HTTPS,
/// HTTP/1.1 and HTTP/2, the test certificate from a .pfx file) and <c>Kestrel:Endpoints:Plain</c> on ephemeral ports.
/// </summary>
public static class ConfiguredEndpoints
{
    /// <summary>A builder with both endpoints configured, plus <paramref name="settings"/>.</summary>
    public static WebApplicationBuilder CreateBuilder(TestFiles files, string plainProtocols, IEnumerable<KeyValuePair<string, string?>>? settings = null)
    {
        string pfx = files.PathOf("server.pfx");
        File.WriteAllBytes(pfx, TestCertificate.Instance.Export(X509ContentType.Pkcs12, "pw"));
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["Kestrel:Endpoints:Secure:Url"] = "https://127.0.0.1:0",
            ["Kestrel:Endpoints:Secure:Protocols"] = "Http1AndHttp2",
            ["Kestrel:Endpoints:Secure:Certificate:Path"] = pfx,
            ["Kestrel:Endpoints:Secure:Certificate:Password"] = "pw",
            ["Kestrel:Endpoints:Plain:Url"] = "http://127.0.0.1:0",
            ["Kestrel:Endpoints:Plain:Protocols"] = plainProtocols,
        });
        if (settings is not null)
        {
            builder.Configuration.AddInMemoryCollection(settings);
        }

        return builder;
    }
}
