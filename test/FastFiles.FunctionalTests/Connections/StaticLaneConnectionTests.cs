using System.Diagnostics.Metrics;
using System.Net;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>Kestrel's contracts while the static lane holds a connection: timeouts, limits, shutdown, aborts, HTTP/2.</summary>
public sealed class StaticLaneConnectionTests : IDisposable
{
    private readonly TestFiles _files = new();

    public StaticLaneConnectionTests()
    {
        _files.Create("one.txt", 1);
        _files.Create("large.bin", 60_000);
    }

    public void Dispose() => _files.Dispose();

    private static string Get(string target, string headers = "") => $"GET {target} HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n";

    private static async Task<string> ReadResponseAsync(Stream stream)
    {
        (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, new CancellationTokenSource(TimeSpan.FromSeconds(30)).Token);
        int length = int.Parse(headers["Content-Length"], System.Globalization.CultureInfo.InvariantCulture);
        var body = new byte[length];
        leftover.AsSpan(0, Math.Min(length, leftover.Length)).CopyTo(body);
        if (leftover.Length < length)
        {
            await stream.ReadExactlyAsync(body.AsMemory(leftover.Length));
        }

        return $"{status} {length}";
    }

    // True when the server closed the connection (EOF or reset) within a generous bound.
    private static async Task<(bool Closed, string Received)> WaitForCloseAsync(Stream stream)
    {
        var received = new MemoryStream();
        var buffer = new byte[4096];
        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        try
        {
            int read;
            while ((read = await stream.ReadAsync(buffer, bound.Token)) > 0)
            {
                received.Write(buffer, 0, read);
            }

            return (true, Encoding.Latin1.GetString(received.ToArray()));
        }
        catch (IOException)
        {
            return (true, Encoding.Latin1.GetString(received.ToArray()));
        }
        catch (OperationCanceledException)
        {
            return (false, Encoding.Latin1.GetString(received.ToArray()));
        }
    }

    // The app's AllowedHosts hold on the lane too: a Host outside them goes to Kestrel, where host filtering answers
    // exactly as without the lane; allowed hosts (exact, any case, any port; "*.name" for subdomains) stay in the lane.
    [Fact]
    public async Task AllowedHosts_AreHonoured_HostsOutsideThemGetTheAppsHostFiltering()
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, settings: [new("AllowedHosts", "localhost;*.example.com")]);
        var factory = host.Services.GetRequiredService<IMeterFactory>();
        using var refused = new InstrumentRecorder(factory, "fastfiles.lane.handoffs", new("fastfiles.lane.reason", "host"));
        foreach (string name in new[] { "LOCALHOST:8080", "a.example.com", "b.a.Example.COM" })
        {
            long before = host.AppRequests;
            string served = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(host.Lane, [Encoding.ASCII.GetBytes($"GET /one.txt HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n")]));
            Assert.StartsWith("HTTP/1.1 200 OK\r\n", served, StringComparison.Ordinal);
            Assert.Equal(before, host.AppRequests);
        }

        foreach (string name in new[] { "evil.test", "example.com", "localhost.evil.test", "xexample.com" })
        {
            byte[] request = Encoding.ASCII.GetBytes($"GET /one.txt HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n");
            string expected = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(host.Plain, [request]));
            Assert.StartsWith("HTTP/1.1 400 Bad Request\r\n", expected, StringComparison.Ordinal);
            Assert.Equal(expected, LaneHost.WithoutDates(await LaneHost.ExchangeAsync(host.Lane, [request])));
        }

        Assert.Equal(4, refused.Total);
    }

    // HostFilteringMiddleware keeps a pattern as written (HostString.ToUriComponent): "localhost:5000" has a port, so it
    // never equals the port-less host of a request (HostString.MatchesAny compares the host alone) and every request gets
    // the app's 400. The lane must not drop the pattern's port and serve what the app refuses.
    [Theory]
    [InlineData("localhost:5000")]
    [InlineData("*.example.com:443")]
    public async Task AllowedHosts_WithAPort_AreAppliedAsTheAppDoes(string allowed)
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, settings: [new("AllowedHosts", allowed)]);
        foreach (string name in new[] { "localhost", "localhost:5000", "a.example.com", "a.example.com:443" })
        {
            byte[] request = Encoding.ASCII.GetBytes($"GET /one.txt HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n");
            string expected = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(host.Plain, [request]));
            Assert.StartsWith("HTTP/1.1 400 Bad Request\r\n", expected, StringComparison.Ordinal);
            string actual = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(host.Lane, [request]));
            Assert.True(expected == actual, $"Host: {name} (AllowedHosts {allowed})\nwithout the lane:\n{expected}\nwith it:\n{actual}");
        }
    }

    // An endpoint that also lists HTTP/3 keeps the lane when Kestrel cannot announce HTTP/3 (no QUIC here, as on most
    // machines without libmsquic): Kestrel adds Alt-Svc only when the QUIC listener exists, so lane responses still
    // match. Where QUIC is there the lane stays off on such an endpoint (StaticLaneWiring.AnnouncesHttp3).
    [Fact]
    public async Task An_endpoint_listing_Http3_without_QUIC_keeps_the_lane()
    {
        Assert.False(OperatingSystem.IsLinux() && System.Net.Quic.QuicListener.IsSupported, "this test is for a machine without QUIC");
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, plainLane: l => l.Protocols = HttpProtocols.Http1AndHttp2AndHttp3);
        using var served = new InstrumentRecorder(host.Services.GetRequiredService<IMeterFactory>(), "fastfiles.lane.requests");
        byte[] request = Encoding.ASCII.GetBytes("GET /one.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        string expected = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(host.Plain, [request]));
        Assert.StartsWith("HTTP/1.1 200 OK\r\n", expected, StringComparison.Ordinal);
        Assert.Equal(expected, LaneHost.WithoutDates(await LaneHost.ExchangeAsync(host.Lane, [request])));
        Assert.Equal(1, served.Total);
    }

    // A named pipe or a device under a root is not a file to serve: opening a FIFO for reading blocks until a writer
    // comes, so an attempt would hold a thread (and the connection) for as long as the client likes. 404, at once.
    [Fact]
    public async Task SpecialFiles_AreNotFound_AndNeverOpened()
    {
        using (var mkfifo = System.Diagnostics.Process.Start("mkfifo", _files.PathOf("pipe.txt")))
        {
            await mkfifo.WaitForExitAsync();
            Assert.Equal(0, mkfifo.ExitCode);
        }

        await using LaneHost host = await LaneHost.StartAsync(_files.Root);
        foreach (Uri endpoint in new[] { host.Plain, host.Lane, host.Tls, host.LaneTls })
        {
            foreach (string request in new[] { Get("/pipe.txt"), Get("/pipe.txt", "Range: bytes=0-0\r\n"), Get("/pipe.txt", "Accept-Encoding: gzip\r\n") })
            {
                byte[] response = await LaneHost.ExchangeAsync(endpoint, [Encoding.ASCII.GetBytes(request + Get("/one.txt", "Connection: close\r\n"))], TimeSpan.FromSeconds(10));
                string text = LaneHost.WithoutDates(response);
                Assert.StartsWith("HTTP/1.1 404 Not Found\r\n", text, StringComparison.Ordinal);
                Assert.Contains("HTTP/1.1 200 OK\r\n", text, StringComparison.Ordinal);
            }
        }
    }

    // A read error while the lane builds an entry (EIO or ESTALE: a failing disk, NFS; here a sysfs attribute whose reads
    // fail) is the server's, not the client's: the request goes to the app, which answers it as without the lane (500),
    // and the requests behind it on the connection are served. The lane used to end the connection without an answer.
    [Fact]
    public async Task A_read_error_building_an_entry_goes_to_the_app_and_the_connection_serves_on()
    {
        const string failing = "/sys/devices/system/cpu/power/autosuspend_delay_ms";
        Assert.Throws<IOException>(() => File.ReadAllBytes(failing));
        File.CreateSymbolicLink(_files.PathOf("eio.txt"), failing);
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, files: root =>
        {
            FastStaticFileOptions options = LaneHost.FilesFor(root);
            options.FollowSymlinksOutsideRoot = true;
            return options;
        });
        byte[] requests = Encoding.ASCII.GetBytes(Get("/eio.txt") + Get("/one.txt", "Connection: close\r\n"));
        foreach ((Uri without, Uri with) in new[] { (host.Plain, host.Lane), (host.Tls, host.LaneTls) })
        {
            string expected = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(without, [requests], TimeSpan.FromSeconds(10)));
            Assert.StartsWith("HTTP/1.1 500 Internal Server Error\r\n", expected, StringComparison.Ordinal);
            Assert.Contains("HTTP/1.1 200 OK\r\n", expected, StringComparison.Ordinal);
            Assert.Equal(expected, LaneHost.WithoutDates(await LaneHost.ExchangeAsync(with, [requests], TimeSpan.FromSeconds(10))));
        }
    }

    [Fact]
    public async Task IdleConnection_ClosedAfterKeepAliveTimeout()
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, k => k.Limits.KeepAliveTimeout = TimeSpan.FromSeconds(1));
        (Socket socket, Stream stream) = await LaneHost.ConnectAsync(host.Lane);
        using (socket)
        await using (stream)
        {
            await stream.WriteAsync(Encoding.ASCII.GetBytes(Get("/one.txt")));
            Assert.Equal("200 1", await ReadResponseAsync(stream));
            long appRequests = host.AppRequests;
            (bool closed, string rest) = await WaitForCloseAsync(stream);
            Assert.True(closed, "the lane kept an idle connection open past KeepAliveTimeout");
            Assert.Equal(string.Empty, rest);
            Assert.Equal(appRequests, host.AppRequests);
        }
    }

    [Theory]
    [InlineData("")]
    [InlineData("GET /one.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")]
    public async Task SlowRequestHeaders_GetKestrelsTimeout(string before)
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, k => k.Limits.RequestHeadersTimeout = TimeSpan.FromSeconds(1));
        var outcomes = new List<string>();
        foreach (Uri endpoint in new[] { host.Plain, host.Lane })
        {
            (Socket socket, Stream stream) = await LaneHost.ConnectAsync(endpoint);
            using (socket)
            await using (stream)
            {
                // A slowloris: the start of a request, then nothing.
                await stream.WriteAsync(Encoding.ASCII.GetBytes(before + "GET /one.txt HTTP/1.1\r\nHo"));
                (bool closed, string received) = await WaitForCloseAsync(stream);
                Assert.True(closed, $"{endpoint}: a partial request held the connection open");
                outcomes.Add(LaneHost.WithoutDates(Encoding.Latin1.GetBytes(received)));
            }
        }

        // Kestrel answers 408 and closes; the lane, holding the partial request, answers the same at the same deadline
        // (after any response it had already sent).
        Assert.Contains("408 Request Timeout", outcomes[0], StringComparison.Ordinal);
        Assert.Equal(outcomes[0], outcomes[1]);
    }

    [Theory]
    [InlineData("header", 2_000)] // the request within one pipe segment
    [InlineData("header", 5_000)] // across segments
    [InlineData("line", 1_019)] // a path the lane would map, the version not yet complete
    public async Task UnfinishedRequestOverALimit_GetsKestrelsAnswer_NotATimeout(string over, int length)
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, k =>
        {
            k.Limits.MaxRequestLineSize = 1024;
            k.Limits.MaxRequestHeadersTotalSize = 2048;
            k.Limits.RequestHeadersTimeout = TimeSpan.FromSeconds(5);
        });

        // The bytes so far are already over the limit, and the request is not finished: Kestrel rejects it at once
        // (431/414); the lane must not wait for the rest and then time it out (408).
        string request = over == "header"
            ? "GET /one.txt HTTP/1.1\r\nHost: localhost\r\nX-A: " + new string('a', 1500) + "\r\nX-B: " + new string('b', length)
            : "GET /" + new string('a', length) + " HTTP/1";
        var outcomes = new List<string>();
        foreach (Uri endpoint in new[] { host.Plain, host.Lane })
        {
            byte[] received = await LaneHost.ExchangeAsync(endpoint, [Encoding.ASCII.GetBytes(request)], TimeSpan.FromSeconds(20));
            outcomes.Add(LaneHost.WithoutDates(received));
        }

        Assert.StartsWith(over == "header" ? "HTTP/1.1 431 " : "HTTP/1.1 414 ", outcomes[0], StringComparison.Ordinal);
        Assert.Equal(outcomes[0], outcomes[1]);
    }

    [Fact]
    public async Task GracefulShutdown_ClosesIdleLaneConnections()
    {
        LaneHost host = await LaneHost.StartAsync(_files.Root);
        try
        {
            (Socket socket, Stream stream) = await LaneHost.ConnectAsync(host.Lane);
            using (socket)
            await using (stream)
            {
                await stream.WriteAsync(Encoding.ASCII.GetBytes(Get("/one.txt")));
                Assert.Equal("200 1", await ReadResponseAsync(stream));
                Task stopping = host.StopAsync();
                (bool closed, _) = await WaitForCloseAsync(stream);
                Assert.True(closed, "shutdown did not close an idle lane connection");
                await stopping.WaitAsync(TimeSpan.FromSeconds(60));
            }
        }
        finally
        {
            await host.DisposeAsync();
        }
    }

    /// <summary>
    /// A request whose first bytes came before graceful shutdown and whose rest came after, which the lane does not
    /// answer itself: Kestrel alone answers it with Connection: close, and so must the lane's hand-off (Kestrel, handed a
    /// connection after shutdown began, would stop before reading it).
    /// </summary>
    [Theory]
    [InlineData("GET /one.txt HTTP/1.1\r\nHost: localhost\r\n", "Authorization: Basic eDp5\r\n\r\n", "HTTP/1.1 200 ")]
    [InlineData("GET /missing.txt HTTP/1.1\r\nHost: localhost\r\n", "\r\n", "HTTP/1.1 404 ")]
    [InlineData("GET /large.bin HTTP/1.1\r\nHost: localhost\r\n", "Range: bytes=0-0, 5-5\r\n\r\n", "HTTP/1.1 206 ")]
    public async Task GracefulShutdown_AnswersAHandedOffRequestThatWasUnderWay(string first, string rest, string status)
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root);
        (string kestrel, string lane) = await host.ExchangeAcrossShutdownAsync(first, rest);
        Assert.StartsWith(status, kestrel, StringComparison.Ordinal);
        Assert.Contains("\r\nConnection: close\r\n", kestrel, StringComparison.Ordinal);
        Assert.Equal(kestrel, lane);
    }

    [Fact]
    public async Task Http2_PassesThrough_AndHttp11OverTls_IsServedByTheLane()
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root);
        using var client = new HttpClient(new SocketsHttpHandler
        {
            SslOptions = { RemoteCertificateValidationCallback = (_, _, _, _) => true },
        });
        long before = host.AppRequests;
        using (var h2 = new HttpRequestMessage(HttpMethod.Get, new Uri(host.LaneTls, "/one.txt")) { Version = HttpVersion.Version20, VersionPolicy = HttpVersionPolicy.RequestVersionExact })
        using (HttpResponseMessage response = await client.SendAsync(h2))
        {
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(HttpVersion.Version20, response.Version);
            Assert.Single(await response.Content.ReadAsByteArrayAsync());
        }

        Assert.Equal(before + 1, host.AppRequests);
        using (var h1 = new HttpRequestMessage(HttpMethod.Get, new Uri(host.LaneTls, "/one.txt")) { Version = HttpVersion.Version11, VersionPolicy = HttpVersionPolicy.RequestVersionExact })
        using (HttpResponseMessage response = await client.SendAsync(h1))
        {
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(HttpVersion.Version11, response.Version);
            Assert.Equal("public, max-age=60", response.Headers.CacheControl?.ToString());
        }

        Assert.Equal(before + 1, host.AppRequests);
    }

    [Fact]
    public async Task MaxConcurrentConnections_CountsLaneConnections()
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, k => k.Limits.MaxConcurrentConnections = 1);
        (Socket first, Stream firstStream) = await LaneHost.ConnectAsync(host.Lane);
        using (first)
        await using (firstStream)
        {
            await firstStream.WriteAsync(Encoding.ASCII.GetBytes(Get("/one.txt")));
            Assert.Equal("200 1", await ReadResponseAsync(firstStream));

            // The lane holds the first connection; Kestrel refuses a second one before any connection middleware runs.
            byte[] second = await LaneHost.ExchangeAsync(host.Lane, [Encoding.ASCII.GetBytes(Get("/one.txt"))], TimeSpan.FromSeconds(10));
            Assert.DoesNotContain("200 OK", Encoding.Latin1.GetString(second), StringComparison.Ordinal);
        }

        // Once it is closed, a new connection is accepted again (Kestrel releases the slot asynchronously).
        string? answer = null;
        for (int attempt = 0; attempt < 100 && answer is null; attempt++)
        {
            byte[] again = await LaneHost.ExchangeAsync(host.Lane, [Encoding.ASCII.GetBytes(Get("/one.txt", "Connection: close\r\n"))], TimeSpan.FromSeconds(10));
            if (Encoding.Latin1.GetString(again).Contains("200 OK", StringComparison.Ordinal))
            {
                answer = "ok";
            }
            else
            {
                await Task.Delay(100);
            }
        }

        Assert.Equal("ok", answer);
    }

    [Fact]
    public async Task ClientResetMidPipeline_LeavesNothingBehind()
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root);
        using var recorder = new InstrumentRecorder(host.Services.GetRequiredService<IMeterFactory>(), "fastfiles.lane.requests");
        for (int round = 0; round < 5; round++)
        {
            Socket socket = await RawHttp.ConnectAsync(host.Lane, receiveBufferSize: 4096);
            // 200 pipelined requests for 60 KB each, never read: the lane blocks on flow control, then the client resets.
            await socket.SendAsync(Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat(Get("/large.bin"), 200))));
            await Task.Delay(50);
            socket.LingerState = new LingerOption(true, 0);
            socket.Close();
        }

        // The server keeps answering, from the lane.
        RawResponse response = await RawHttp.SendAsync(host.Lane, "/large.bin");
        Assert.Equal(200, response.Status);
        Assert.Equal(60_000, response.Body.Length);
        Assert.True(recorder.Total > 0);
        await ResponseHeaders.AssertNoOpenFilesUnderAsync(_files.Root);
    }

    [Fact]
    public async Task HandOffs_AreCountedByReason()
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root);
        var factory = host.Services.GetRequiredService<IMeterFactory>();
        using var method = new InstrumentRecorder(factory, "fastfiles.lane.handoffs", new("fastfiles.lane.reason", "method"));
        using var notFound = new InstrumentRecorder(factory, "fastfiles.lane.handoffs", new("fastfiles.lane.reason", "notfound"));
        using var served = new InstrumentRecorder(factory, "fastfiles.lane.requests");
        using var bytes = new InstrumentRecorder(factory, "fastfiles.lane.bytes");

        await LaneHost.ExchangeAsync(host.Lane, [Encoding.ASCII.GetBytes(Get("/one.txt") + "DELETE /one.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")]);
        await LaneHost.ExchangeAsync(host.Lane, [Encoding.ASCII.GetBytes(Get("/nothing-here.txt", "Connection: close\r\n"))]);

        Assert.Equal(1, method.Total);
        Assert.Equal(1, notFound.Total);
        Assert.Equal(1, served.Total);
        Assert.True(bytes.Total > 100, $"{bytes.Total} bytes");
    }

    [Fact]
    public async Task ConfigurationEndpoints_GetTheLane_WithRootsFromConfiguration()
    {
        WebApplicationBuilder builder = ConfiguredEndpoints.CreateBuilder(_files, plainProtocols: "Http1", new Dictionary<string, string?>
        {
            ["FastFiles:StaticLane:Roots:0:PhysicalPath"] = _files.Root,
            ["FastFiles:StaticLane:Roots:0:Files:RequestPath"] = "/static",
            ["FastFiles:StaticLane:Roots:0:Files:CacheControl"] = "public, max-age=5",
        });
        await AssertLaneServesEveryEndpointAsync(builder, "Cache-Control: public, max-age=5");
    }

    // --urls (ASPNETCORE_URLS, launchSettings.json): Kestrel builds these endpoints itself, from its endpoint defaults.
    [Fact]
    public async Task UrlBoundEndpoints_GetTheLane_OnPlaintextAndInsideTls()
    {
        WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args = ["--urls", "http://127.0.0.1:0;https://127.0.0.1:0", "--FastFiles:StaticLane:Roots:0:PhysicalPath", _files.Root,
                "--FastFiles:StaticLane:Roots:0:Files:RequestPath", "/static", "--FastFiles:StaticLane:Roots:0:Files:CacheControl", "public, max-age=6"],
            ContentRootPath = _files.Root,
        });
        builder.Logging.ClearProviders();
        builder.WebHost.ConfigureKestrel(k => k.ConfigureHttpsDefaults(https => https.ServerCertificate = TestCertificate.Instance));
        await AssertLaneServesEveryEndpointAsync(builder, "Cache-Control: public, max-age=6");
    }

    // SNI endpoints keep Kestrel's own TLS (its per-host selection is internal): the lane goes behind it.
    [Fact]
    public async Task SniEndpointsFromConfiguration_GetTheLane_BehindKestrelsTls()
    {
        string pfx = Path.Combine(_files.Root, "server.pfx");
        File.WriteAllBytes(pfx, TestCertificate.Instance.Export(X509ContentType.Pkcs12, "pw"));
        WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args =
            [
                "--Kestrel:Endpoints:Plain:Url=http://127.0.0.1:0", "--Kestrel:Endpoints:Hosts:Url=https://127.0.0.1:0",
                $"--Kestrel:Endpoints:Hosts:Sni:*:Certificate:Path={pfx}", "--Kestrel:Endpoints:Hosts:Sni:*:Certificate:Password=pw",
                "--FastFiles:StaticLane:Roots:0:PhysicalPath", _files.Root, "--FastFiles:StaticLane:Roots:0:Files:RequestPath", "/static",
                "--FastFiles:StaticLane:Roots:0:Files:CacheControl", "public, max-age=7",
            ],
            ContentRootPath = _files.Root,
        });
        builder.Logging.ClearProviders();
        await AssertLaneServesEveryEndpointAsync(builder, "Cache-Control: public, max-age=7");
    }

    // On every endpoint the app binds: a lane file then an app endpoint on one connection; only the latter reaches the app.
    private static async Task AssertLaneServesEveryEndpointAsync(WebApplicationBuilder builder, string laneHeader)
    {
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k => k.UseFastFilesConnections(o => o.EnableStaticLane = true));
        long appRequests = 0;
        WebApplication app = builder.Build();
        app.Use((context, next) =>
        {
            Interlocked.Increment(ref appRequests);
            return next(context);
        });
        app.MapGet("/hello", () => "hello");
        await app.StartAsync();
        await using WebApplication _ = app;
        string[] addresses = [.. app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses];
        foreach (string address in addresses)
        {
            byte[] response = await LaneHost.ExchangeAsync(new Uri(address), [Encoding.ASCII.GetBytes(Get("/static/one.txt") + Get("/hello", "Connection: close\r\n"))]);
            string text = Encoding.Latin1.GetString(response);
            Assert.Contains(laneHeader, text, StringComparison.Ordinal);
            Assert.EndsWith("5\r\nhello\r\n0\r\n\r\n", text, StringComparison.Ordinal);
        }

        // Only /hello reached the app, once per endpoint: the files came from the lane, inside TLS on the HTTPS one.
        Assert.Equal(2, addresses.Length);
        Assert.Equal(addresses.Length, Interlocked.Read(ref appRequests));
    }
}
