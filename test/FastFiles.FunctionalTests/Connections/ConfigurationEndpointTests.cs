using System.Net;
using System.Security.Cryptography.X509Certificates;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>Endpoints from <c>Kestrel:Endpoints</c>, where the loader adds TLS after every endpoint callback.</summary>
public sealed class ConfigurationEndpointTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    private async Task<(WebApplication App, Http2TlsOutputStageOptions Stage)> StartAsync(Action<WebApplicationBuilder> configure)
    {
        WebApplicationBuilder builder = ConfiguredEndpoints.CreateBuilder(_files, plainProtocols: "Http2");
        Http2TlsOutputStageOptions? stage = null;
        builder.WebHost.ConfigureKestrel(k => k.UseFastFilesConnections(o =>
        {
            o.EnableHttp2TlsOutputStage = true;
            o.Http2TlsOutputStage.Mode = Http2TlsOutputStageMode.AllProtocols;
            stage = o.Http2TlsOutputStage;
        }));
        configure(builder);
        WebApplication app = builder.Build();
        app.MapGet("/hello", () => "hello");
        await app.StartAsync();
        return (app, stage!);
    }

    private static Uri Address(WebApplication app, string scheme)
        => new(app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single(a => a.StartsWith(scheme + "://", StringComparison.Ordinal)));

    private static HttpClient CreateClient() => new(new SocketsHttpHandler
    {
        SslOptions = { RemoteCertificateValidationCallback = (_, cert, _, _) => cert is not null && cert.GetCertHashString() == TestCertificate.Instance.GetCertHashString() },
    });

    private static async Task<string> GetAsync(HttpClient client, Uri baseAddress, Version version)
    {
        using var request = new HttpRequestMessage(HttpMethod.Get, new Uri(baseAddress, "/hello")) { Version = version, VersionPolicy = HttpVersionPolicy.RequestVersionExact };
        using HttpResponseMessage response = await client.SendAsync(request);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(version, response.Version);
        return await response.Content.ReadAsStringAsync();
    }

    [Fact]
    public async Task Https_endpoint_from_configuration_gets_record_coalescing_inside_tls()
    {
        (WebApplication app, Http2TlsOutputStageOptions stage) = await StartAsync(b => b.WebHost.ConfigureKestrel(k => k.UseFastFilesConnections(o => o.EnableTlsRecordCoalescing = true)));
        await using WebApplication _ = app;
        using var coalesced = new InstrumentRecorder(app.Services.GetRequiredService<System.Diagnostics.Metrics.IMeterFactory>(), "fastfiles.tls_records.coalesced_connections");
        using HttpClient client = CreateClient();

        Assert.Equal("hello", await GetAsync(client, Address(app, "https"), HttpVersion.Version20));
        Assert.Equal("hello", await GetAsync(client, Address(app, "https"), HttpVersion.Version11));
        Assert.Equal("hello", await GetAsync(client, Address(app, "http"), HttpVersion.Version20));
        // Outside TLS it would see no TLS handshake and count nothing; the later UseFastFilesConnections call turned the stage off.
        Assert.Equal(2, coalesced.Total);
        Assert.Equal(0, stage.Statistics.ConnectionsStaged);
    }

    [Fact]
    public async Task Https_endpoint_from_configuration_gets_the_stage_inside_tls()
    {
        (WebApplication app, Http2TlsOutputStageOptions stage) = await StartAsync(_ => { });
        await using WebApplication _ = app;
        using HttpClient client = CreateClient();

        Assert.Equal("hello", await GetAsync(client, Address(app, "https"), HttpVersion.Version20));
        Assert.Equal("hello", await GetAsync(client, Address(app, "https"), HttpVersion.Version11));
        // A stage outside TLS would see no TLS feature and pass the connections through.
        Assert.Equal(2, stage.Statistics.ConnectionsStaged);
        Assert.Equal(0, stage.Statistics.ConnectionsPassedThrough);

        Assert.Equal("hello", await GetAsync(client, Address(app, "http"), HttpVersion.Version20));
        Assert.Equal(2, stage.Statistics.ConnectionsStaged);
    }

    [Fact]
    public async Task Own_endpoint_callback_registered_later_can_add_the_stage_itself()
    {
        Http2TlsOutputStageOptions? own = null;
        bool called = false;
        (WebApplication app, Http2TlsOutputStageOptions stage) = await StartAsync(b => b.WebHost.ConfigureKestrel(k =>
            k.ConfigurationLoader!.Endpoint("Secure", e =>
            {
                called = true;
                e.HttpsOptions.HandshakeTimeout = TimeSpan.FromSeconds(30);
                e.UseHttp2TlsOutputStage(o => own = o);
            })));
        await using WebApplication _ = app;
        using HttpClient client = CreateClient();

        Assert.Equal("hello", await GetAsync(client, Address(app, "https"), HttpVersion.Version20));
        Assert.True(called);
        Assert.Equal(1, own!.Statistics.ConnectionsStaged);
        Assert.Equal(0, stage.Statistics.ConnectionsStaged);
    }
}
