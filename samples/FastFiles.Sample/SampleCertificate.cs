using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace FastFiles.Sample;

/// <summary>
/// The HTTPS certificate: the ASP.NET Core development certificate when one is installed, otherwise a
/// self-signed one for localhost made at start-up (browsers will warn; curl needs -k).
/// </summary>
internal static class SampleCertificate
{
    private const string AspNetHttpsOid = "1.3.6.1.4.1.311.84.1.1";

    public static X509Certificate2 DevelopmentOrSelfSigned(out bool generated)
    {
        using var store = new X509Store(StoreName.My, StoreLocation.CurrentUser);
        try
        {
            store.Open(OpenFlags.ReadOnly);
            foreach (X509Certificate2 candidate in store.Certificates)
            {
                if (candidate.HasPrivateKey && candidate.NotAfter > DateTime.Now
                    && candidate.Extensions.Any(e => e.Oid?.Value == AspNetHttpsOid))
                {
                    generated = false;
                    return candidate;
                }
            }
        }
        catch (CryptographicException)
        {
            // No usable store on this machine: fall through to a generated certificate.
        }

        generated = true;
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest("CN=localhost", key, HashAlgorithmName.SHA256);
        var names = new SubjectAlternativeNameBuilder();
        names.AddDnsName("localhost");
        names.AddIpAddress(IPAddress.Loopback);
        names.AddIpAddress(IPAddress.IPv6Loopback);
        request.CertificateExtensions.Add(names.Build());
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid("1.3.6.1.5.5.7.3.1")], false));
        using X509Certificate2 certificate = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(90));
        return X509CertificateLoader.LoadPkcs12(certificate.Export(X509ContentType.Pkcs12), null);
    }
}
