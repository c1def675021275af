using System.Net;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>The HTTP/2 endpoints the stream-reset suites drive, in the order their tests index them.</summary>
internal static class Http2Endpoints
{
    public static void ListenOnEach(KestrelServerOptions k)
    {
        // 0: h2c.
        k.Listen(IPAddress.Loopback, 0, l => l.Protocols = HttpProtocols.Http2);
        // 1: h2c on the send path.
        k.Listen(IPAddress.Loopback, 0, l =>
        {
            l.Protocols = HttpProtocols.Http2;
            l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.Zero);
        });
        // 2: h2 over TLS, record coalescing and the output stage.
        k.Listen(IPAddress.Loopback, 0, l =>
        {
            l.Protocols = HttpProtocols.Http2;
            l.UseHttps(TestCertificate.Instance);
            l.UseTlsRecordCoalescing().UseHttp2TlsOutputStage();
        });
        // 3: h2 over TLS, record coalescing only.
        k.Listen(IPAddress.Loopback, 0, l =>
        {
            l.Protocols = HttpProtocols.Http2;
            l.UseHttps(TestCertificate.Instance);
            l.UseTlsRecordCoalescing();
        });
        // 4: h2 over TLS, Kestrel's own output.
        k.Listen(IPAddress.Loopback, 0, l =>
        {
            l.Protocols = HttpProtocols.Http2;
            l.UseHttps(TestCertificate.Instance);
        });
    }
}
