using System.Net;
using System.Security.Cryptography.X509Certificates;
using FastFiles.BenchHost;
using Microsoft.AspNetCore.Server.Kestrel.Core;

// The load-test host: one app, one file-serving configuration per --mode, HTTP/1.1 plaintext, HTTP/2 (and
// HTTP/1.1) over TLS and, with --h2c-port, HTTP/2 cleartext with prior knowledge on loopback, and /_stats for the
// harness. Usage:
//   FastFiles.BenchHost --mode fastfiles --root DIR --http-port 5000 --https-port 5001 [--h2c-port 5002]
//                       --cert cert.pem --key key.pem
var options = BenchHostOptions.Parse(args);
if (!BenchModes.All.TryGetValue(options.Mode, out BenchMode? mode) || mode is null)
{
    Console.Error.WriteLine($"Unknown --mode '{options.Mode}'. Known: {string.Join(", ", BenchModes.All.Keys)}");
    return 2;
}

var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions
{
    Args = [],
    EnvironmentName = Environments.Production,
    ContentRootPath = AppContext.BaseDirectory,
    // MapStaticAssets serves from the web root.
    WebRootPath = options.Root,
});

// Logging is part of what a production server pays, but a console logger would make the measurement about the
// console; none of the configurations under test log per request at their default levels anyway.
builder.Logging.ClearProviders();

X509Certificate2 certificate = CertificateLoader.Load(options.CertificatePath, options.KeyPath);
builder.WebHost.ConfigureKestrel(kestrel =>
{
    kestrel.AddServerHeader = false;
    mode.Kestrel?.Invoke(kestrel);
    kestrel.Listen(IPAddress.Loopback, options.HttpPort, listen =>
    {
        listen.Protocols = HttpProtocols.Http1;
        mode.Listen?.Invoke(listen);
    });
    kestrel.Listen(IPAddress.Loopback, options.HttpsPort, listen =>
    {
        listen.Protocols = HttpProtocols.Http1AndHttp2;
        listen.UseHttps(certificate);
        mode.Listen?.Invoke(listen);
    });
    if (options.H2cPort is int h2cPort)
    {
        // HTTP/2 alone on a plaintext endpoint is prior knowledge: without TLS there is no ALPN to negotiate with,
        // and Kestrel does not do the HTTP/1.1 Upgrade dance.
        kestrel.Listen(IPAddress.Loopback, h2cPort, listen =>
        {
            listen.Protocols = HttpProtocols.Http2;
            mode.Listen?.Invoke(listen);
        });
    }
});

if (mode.InlineScheduling)
{
    builder.WebHost.UseSockets(sockets => sockets.UnsafePreferInlineScheduling = true);
}

mode.Host?.Invoke(builder.WebHost);
mode.ConfigureServices(builder.Services);
WebApplication app = builder.Build();

var stats = new ServerStats();
app.Use(next => stats.Middleware(next));
mode.Configure(app, options.Root);

await app.RunAsync();
return 0;
