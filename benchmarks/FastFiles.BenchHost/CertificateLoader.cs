using System.Security.Cryptography.X509Certificates;

namespace FastFiles.BenchHost;

internal static class CertificateLoader
{
    public static X509Certificate2 Load(string path, string? keyPath)
    {
        if (keyPath is null)
        {
            return X509CertificateLoader.LoadPkcs12FromFile(path, password: null);
        }

        using X509Certificate2 pem = X509Certificate2.CreateFromPemFile(path, keyPath);
        // A PEM key is ephemeral; a PKCS#12 round-trip gives SslStream a key it can use on every platform.
        return X509CertificateLoader.LoadPkcs12(pem.Export(X509ContentType.Pkcs12), password: null);
    }
}
