using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// An HTTP/1.1 connection staged in AllProtocols mode whose app asks for the client certificate after writing part of
/// its response (ClientCertificateMode.DelayCertificate: TLS 1.2 renegotiation, TLS 1.3 post-handshake authentication).
/// The negotiation writes to the SslStream the stage's drain writes to; the two must take turns, so the response
/// arrives whole with the certificate's subject after it, as without the stage.
/// </summary>
public sealed class Http2TlsOutputStageClientCertificateTests
{
    private const int FirstPart = 1024 * 1024;

    [Theory]
    [InlineData(SslProtocols.Tls12, false)]
    [InlineData(SslProtocols.Tls12, true)]
    [InlineData(SslProtocols.Tls13, false)]
    [InlineData(SslProtocols.Tls13, true)]
    public async Task A_delayed_client_certificate_after_a_large_write_arrives_after_the_whole_body(SslProtocols protocol, bool staged)
    {
        byte[] part = new byte[FirstPart];
        new Random(1).NextBytes(part);
        var logs = new LogRecorder();
        await using TestHost host = await TestHost.StartAsync(
            configureServices: s => s.AddLogging(b => b.AddProvider(logs)),
            configureApp: app => app.MapGet("/cert", async (HttpContext context) =>
            {
                await context.Response.Body.WriteAsync(part);
                X509Certificate2? certificate = await context.Connection.GetClientCertificateAsync();
                await context.Response.WriteAsync("cert:" + (certificate?.Subject ?? "none"));
            }),
            configureKestrel: k => k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseHttps(o =>
                {
                    o.ServerCertificate = TestCertificate.Instance;
                    o.ClientCertificateMode = ClientCertificateMode.DelayCertificate;
                    o.AllowAnyClientCertificate();
                    o.SslProtocols = protocol;
                });
                if (staged)
                {
                    l.UseHttp2TlsOutputStage(s => s.Mode = Http2TlsOutputStageMode.AllProtocols);
                }
            }));

        // A small receive buffer: the first part is still being written when the app asks for the certificate.
        (TcpClient tcpClient, SslStream tlsStream) = await TestCertificate.ConnectHttp11Async(
            host.Addresses[^1].Port, clientCertificate: TestCertificate.Client, protocols: protocol);
        using TcpClient tcp = tcpClient;
        await using SslStream tls = tlsStream;
        await tls.WriteAsync(Encoding.ASCII.GetBytes("GET /cert HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
        using var received = new MemoryStream();
        await tls.CopyToAsync(received).WaitAsync(TimeSpan.FromSeconds(60));

        byte[] response = received.ToArray();
        byte[] body = RawHttp.Dechunk(response.AsSpan(response.AsSpan().IndexOf("\r\n\r\n"u8) + 4), out _);
        Assert.StartsWith("HTTP/1.1 200", Encoding.ASCII.GetString(response, 0, 12));
        Assert.True(body.AsSpan(0, Math.Min(FirstPart, body.Length)).SequenceEqual(part), $"the first part differs ({body.Length} body bytes)");
        Assert.Equal("cert:CN=client", Encoding.ASCII.GetString(body, FirstPart, body.Length - FirstPart));
        logs.AssertNoErrors();
    }
}
