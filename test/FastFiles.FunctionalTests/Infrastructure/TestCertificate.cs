using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>A self-signed certificate for 127.0.0.1/localhost, made once per test run.</summary>
public static class TestCertificate
{
    private static readonly Lazy<X509Certificate2> Lazy = new(Create);

    public static X509Certificate2 Instance => Lazy.Value;

    private static X509Certificate2 Create()
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest("CN=localhost", key, HashAlgorithmName.SHA256);
        var san = new SubjectAlternativeNameBuilder();
        san.AddDnsName("localhost");
        san.AddIpAddress(System.Net.IPAddress.Loopback);
        request.CertificateExtensions.Add(san.Build());
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.1")], false));
        using X509Certificate2 cert = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(30));
        // Round-trip through PFX so the private key is usable by SslStream on every platform.
        return X509CertificateLoader.LoadPkcs12(cert.Export(X509ContentType.Pkcs12), password: null);
    }
}
