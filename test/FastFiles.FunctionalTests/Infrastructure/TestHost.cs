using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>How a test talks to the server.</summary>
public enum Transport
{
    /// <summary>HTTP/1.1 over plain TCP.</summary>
    Http11,

    /// <summary>HTTP/2 over plain TCP with prior knowledge.</summary>
    H2c,

    /// <summary>HTTP/2 over TLS (ALPN h2).</summary>
    H2Tls,

    /// <summary>HTTP/1.1 over TLS.</summary>
    Http11Tls,
}

/// <summary>
/// A real Kestrel on 127.0.0.1 with ephemeral ports: one HTTP/1.1 endpoint, one h2c endpoint, and one TLS
/// endpoint speaking HTTP/1.1 and HTTP/2 with a generated certificate.
/// </summary>
public sealed class TestHost : IAsyncDisposable
{
    private readonly WebApplication _app;
    private readonly SocketsHttpHandler _handler;

    private TestHost(WebApplication app, Uri http, Uri h2c, Uri https, Uri httpCopy)
    {
        _app = app;
        Http = http;
        H2c = h2c;
        Https = https;
        HttpCopy = httpCopy;
        _handler = new SocketsHttpHandler
        {
            AutomaticDecompression = DecompressionMethods.None,
            AllowAutoRedirect = false,
            UseCookies = false,

            // Kestrel 10.0.x can lose an HTTP/2 response: a stream WINDOW_UPDATE racing the frame writer's last write of a
            // response schedules the finished Http2OutputProducer once more, the writer skips it with _isScheduled left
            // set, StreamReset keeps it, and the next request on the connection (which reuses that pooled stream) never
            // gets a frame (dotnet/aspnetcore#53736). Only a stream whose window ran out gets such an update: 1 MiB keeps
            // bodies under 1 MiB (the parity and compression tests') from running out, and still holds back the 16 and
            // 32 MiB bodies of the tests that rely on flow control.
            InitialHttp2StreamWindowSize = 1024 * 1024,
            SslOptions = { RemoteCertificateValidationCallback = (_, cert, _, _) => cert is not null && cert.GetCertHashString() == TestCertificate.Instance.GetCertHashString() },
        };
        Client = new HttpClient(_handler) { Timeout = TimeSpan.FromSeconds(60) };
    }

    public Uri Http { get; }

    public Uri H2c { get; }

    public Uri Https { get; }

    /// <summary>A plaintext HTTP/1.1 endpoint without the zero-copy send path (<see cref="Http"/> has it), for differential tests.</summary>
    public Uri HttpCopy { get; }

    /// <summary>A client that validates the test certificate and never decompresses or follows redirects.</summary>
    public HttpClient Client { get; }

    public IServiceProvider Services => _app.Services;

    /// <summary>Every bound address in listen order: the four above, then those added by <c>configureKestrel</c>.</summary>
    public IReadOnlyList<Uri> Addresses => _app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Select(a => new Uri(a)).ToArray();

    /// <summary>The server's limits, as configured.</summary>
    public KestrelServerLimits ServerLimits() => _app.Services.GetRequiredService<Microsoft.Extensions.Options.IOptions<KestrelServerOptions>>().Value.Limits;

    public static async Task<TestHost> StartAsync(
        Action<WebApplication> configureApp,
        Action<IServiceCollection>? configureServices = null,
        Action<KestrelServerOptions>? configureKestrel = null,
        Action<ListenOptions>? configureTls = null,
        string? contentRoot = null,
        string? webRoot = null,
        Action<ListenOptions>? configureH2c = null,
        Action<ListenOptions>? configureEndpoints = null)
    {
        var options = new WebApplicationOptions
        {
            // No appsettings reload watcher: it would take one of the user's inotify instances per host, and hundreds
            // of hosts run here; FastFiles' own cache watchers are the ones under test.
            Args = ["--hostBuilder:reloadConfigOnChange=false"],
            EnvironmentName = "Production",
            ContentRootPath = contentRoot ?? AppContext.BaseDirectory,
            WebRootPath = webRoot,
        };
        WebApplicationBuilder builder = WebApplication.CreateBuilder(options);
        builder.Logging.ClearProviders();
        builder.Logging.SetMinimumLevel(LogLevel.Warning);
        builder.WebHost.ConfigureKestrel(k =>
        {
            // The send path on the main HTTP/1.1 endpoint, for every body size and files just written, so every test
            // exercises it.
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseZeroCopySendFile(o =>
                {
                    o.MinimumLength = 0;
                    o.RecentWriteWindow = TimeSpan.Zero;
                });
                configureEndpoints?.Invoke(l);
            });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http2;
                configureEndpoints?.Invoke(l);
                configureH2c?.Invoke(l);
            });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1AndHttp2;
                l.UseHttps(TestCertificate.Instance);
                configureEndpoints?.Invoke(l);
                configureTls?.Invoke(l);
            });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                configureEndpoints?.Invoke(l);
            });
            configureKestrel?.Invoke(k);
        });
        configureServices?.Invoke(builder.Services);
        WebApplication app = builder.Build();
        configureApp(app);
        await app.StartAsync();

        string[] addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.ToArray();
        // Addresses come back in listen order.
        return new TestHost(app, new Uri(addresses[0]), new Uri(addresses[1]), new Uri(addresses[2]), new Uri(addresses[3]));
    }

    public Uri BaseFor(Transport transport) => transport switch
    {
        Transport.Http11 => Http,
        Transport.H2c => H2c,
        _ => Https,
    };

    public static Version VersionFor(Transport transport)
        => transport is Transport.H2c or Transport.H2Tls ? HttpVersion.Version20 : HttpVersion.Version11;

    /// <summary>Builds a request for <paramref name="pathAndQuery"/> with the exact protocol version of <paramref name="transport"/>.</summary>
    public HttpRequestMessage Request(Transport transport, string pathAndQuery, HttpMethod? method = null)
        => new(method ?? HttpMethod.Get, new Uri(BaseFor(transport), pathAndQuery))
        {
            Version = VersionFor(transport),
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
        };

    public async Task<HttpResponseMessage> SendAsync(Transport transport, string pathAndQuery, Action<HttpRequestMessage>? configure = null, HttpMethod? method = null)
    {
        HttpRequestMessage request = Request(transport, pathAndQuery, method);
        configure?.Invoke(request);
        return await Client.SendAsync(request);
    }

    /// <summary>Stops the server gracefully (in-flight requests may finish) without disposing the client.</summary>
    public Task StopAsync() => _app.StopAsync();

    public async ValueTask DisposeAsync()
    {
        Client.Dispose();
        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}
