using System.Net;
using System.Net.Security;
using System.Security.Authentication;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>A self-signed certificate for 127.0.0.1/localhost, made once per test run.</summary>
public static class TestCertificate
{
    private static readonly Lazy<X509Certificate2> Lazy = new(Create);
    private static readonly Lazy<X509Certificate2> LazyClient = new(() => SelfSigned("CN=client", "1.3.6.1.5.5.7.3.2", null));

    public static X509Certificate2 Instance => Lazy.Value;

    /// <summary>A self-signed client certificate (<c>CN=client</c>, client-authentication usage), made once per test run.</summary>
    public static X509Certificate2 Client => LazyClient.Value;

    /// <summary>Trusts exactly <see cref="Instance"/>.</summary>
    public static bool Validate(X509Certificate? certificate) => certificate is not null && certificate.GetCertHashString() == Instance.GetCertHashString();

    /// <summary>
    /// A raw HTTP/1.1-over-TLS client on a loopback port, with a small receive buffer so a client that does not read
    /// soon fills the server's socket. The caller disposes both.
    /// </summary>
    /// <remarks>
    /// With <paramref name="clientCertificate"/>, it is offered whenever the server asks, also after the handshake;
    /// <paramref name="protocols"/> pins the TLS version (the system's default when <see langword="null"/>).
    /// </remarks>
    public static async Task<(TcpClient Tcp, SslStream Tls)> ConnectHttp11Async(
        int port, int receiveBufferSize = 4096, X509Certificate2? clientCertificate = null, SslProtocols? protocols = null)
    {
        var tcp = new TcpClient { ReceiveBufferSize = receiveBufferSize };
        await tcp.ConnectAsync(IPAddress.Loopback, port);
        var tls = new SslStream(tcp.GetStream());
        await tls.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
        {
            TargetHost = "localhost",
            ApplicationProtocols = [SslApplicationProtocol.Http11],
            RemoteCertificateValidationCallback = (_, cert, _, _) => Validate(cert),
            ClientCertificates = clientCertificate is null ? null : [clientCertificate],
            LocalCertificateSelectionCallback = clientCertificate is null ? null : (_, _, _, _, _) => clientCertificate,
            EnabledSslProtocols = protocols ?? SslProtocols.None,
        });
        return (tcp, tls);
    }

    private static X509Certificate2 Create() => SelfSigned("CN=localhost", "1.3.6.1.5.5.7.3.1", request =>
    {
        var san = new SubjectAlternativeNameBuilder();
        san.AddDnsName("localhost");
        san.AddIpAddress(System.Net.IPAddress.Loopback);
        request.CertificateExtensions.Add(san.Build());
    });

    private static X509Certificate2 SelfSigned(string subject, string usage, Action<CertificateRequest>? extend)
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest(subject, key, HashAlgorithmName.SHA256);
        extend?.Invoke(request);
        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension([new Oid(usage)], false));
        using X509Certificate2 cert = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(30));
        // Round-trip through PFX so the private key is usable by SslStream on every platform.
        return X509CertificateLoader.LoadPkcs12(cert.Export(X509ContentType.Pkcs12), password: null);
    }
}
