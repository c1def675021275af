using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Text;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// Clients that leave at every phase and servers that stop with bodies in flight, on the static lane (plaintext with
/// the send path, and inside TLS) and on Kestrel's path with and without the send path: nothing leaks, nothing is
/// logged as an error, and stopping ends every connection.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed class AbortAndShutdownTests : IAsyncLifetime
{
    private const int CacheLimit = 16 * 1024;
    private const int BigLength = 8 * 1024 * 1024;
    private readonly TestFiles _files = new();
    private readonly LogRecorder _logs = new();
    private WebApplication _app = null!;
    private Uri[] _addresses = null!;
    private byte[] _big = null!;

    public async Task InitializeAsync()
    {
        _big = _files.Create("big.bin", BigLength);
        _files.Create("small.txt", 1000);
        _app = Build(null);
        _addresses = await CodeEndpoints.StartAsync(_app);
    }

    private WebApplication Build(TimeSpan? shutdownTimeout, MinDataRate? rate = null)
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles(o => o.MaxCachedFileSize = CacheLimit);
        builder.Logging.AddProvider(_logs);
        if (shutdownTimeout is { } t)
        {
            builder.WebHost.UseShutdownTimeout(t);
        }

        FastStaticFileOptions Files() => new() { FileProvider = new PhysicalFileProvider(_files.Root) };
        void Lane(StaticLaneOptions o) => o.Roots.Add(new StaticLaneRootOptions { PhysicalPath = _files.Root, Files = Files() });
        builder.WebHost.ConfigureKestrel(k =>
        {
            k.Limits.MinResponseDataRate = rate;
            // 0: the lane, bodies by sendfile(2).
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.Zero).UseStaticLane(Lane);
            });
            // 1: Kestrel's path with the send path (holes).
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.Zero);
            });
            // 2: the lane inside TLS.
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseHttps(TestCertificate.Instance);
                l.UseStaticLane(Lane);
            });
            // 3: plain copy path.
            k.Listen(IPAddress.Loopback, 0, l => l.Protocols = HttpProtocols.Http1);
            // 4: h2 over TLS with record coalescing and the output stage.
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http2;
                l.UseHttps(TestCertificate.Instance);
                l.UseTlsRecordCoalescing().UseHttp2TlsOutputStage();
            });
            // 5: h2 over TLS with record coalescing only.
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http2;
                l.UseHttps(TestCertificate.Instance);
                l.UseTlsRecordCoalescing();
            });
            // 6: HTTP/1.1 over TLS, no lane.
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseHttps(TestCertificate.Instance);
            });
            // 7: h2c with the send path.
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http2;
                l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.Zero);
            });
        });
        WebApplication app = builder.Build();
        app.Map("/stock", b => b.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true }));
        app.Map("/stockfast", b =>
        {
            b.UseFastSendFile();
            b.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true });
        });
        app.Map("/result", b =>
        {
            b.UseFastSendFile();
            b.Run(context => Microsoft.AspNetCore.Http.Results.File(_files.PathOf(context.Request.Path.Value!), "application/octet-stream", enableRangeProcessing: true).ExecuteAsync(context));
        });
        app.Map("/fastresult", b => b.Run(context => FastResults.PhysicalFile(_files.PathOf(context.Request.Path.Value!), "application/octet-stream", null, enableRangeProcessing: true).ExecuteAsync(context)));
        // The app aborts the request itself, a while into the body.
        app.Map("/abort", b =>
        {
            b.Use(async (context, next) =>
            {
                int ms = int.Parse(context.Request.Query["ms"]!, System.Globalization.CultureInfo.InvariantCulture);
                Task serving = next(context);
                if (await Task.WhenAny(serving, Task.Delay(ms)) != serving)
                {
                    context.Abort();
                }

                await serving;
            });
            b.UseFastFiles(Files());
        });
        app.UseFastFiles(Files());
        return app;
    }

    public async Task DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
        _files.Dispose();
    }

    private async Task<Stream> OpenAsync(int endpoint, Socket socket)
    {
        var network = new NetworkStream(socket, ownsSocket: false);
        if (endpoint is not 2 and not 6)
        {
            return network;
        }

        var tls = new SslStream(network, leaveInnerStreamOpen: false, (_, _, _, _) => true);
        await tls.AuthenticateAsClientAsync("localhost");
        return tls;
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(6)]
    [InlineData(6, "/stock")]
    [InlineData(2, "/stock")]
    [InlineData(1, "/stockfast")]
    [InlineData(1, "/result")]
    [InlineData(1, "/fastresult")]
    [InlineData(6, "/stockfast")]
    [InlineData(6, "/fastresult")]
    [InlineData(3, "/fastresult")]
    public async Task Resets_at_every_phase_leak_nothing(int endpoint, string prefix = "")
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            Uri uri = _addresses[endpoint];
            var chunk = new byte[64 * 1024];
            for (int i = 0; i < 150; i++)
            {
                using Socket socket = await RawHttp.ConnectAsync(uri, receiveBufferSize: 16 * 1024);
                using Stream stream = await OpenAsync(endpoint, socket);
                string first = i % 3 == 0 ? "GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n" : string.Empty;
                string request = first + (i % 4) switch
                {
                    0 => $"GET {prefix}/big.bin HTTP/1.1\r\nHost: x\r\n\r\n",
                    1 => $"GET {prefix}/big.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=100-\r\n\r\n",
                    2 => $"GET {prefix}/big.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /big.bin HTTP/1.1\r\nHo",
                    _ => $"GET {prefix}/big.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n",
                };
                await stream.WriteAsync(Encoding.ASCII.GetBytes(request));
                int want = (i % 5) * 50 * 1024;
                int got = 0;
                while (got < want)
                {
                    int read = await stream.ReadAsync(chunk);
                    if (read == 0)
                    {
                        break;
                    }

                    got += read;
                }

                socket.LingerState = new LingerOption(true, 0);
                socket.Close();
            }

            await AssertCleanAsync();
        });
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public async Task Stop_with_a_stalled_reader_closes_after_the_shutdown_timeout(int endpoint)
    {
        await RestartAsync(TimeSpan.FromSeconds(1));

        var sockets = new List<Socket>();
        var streams = new List<Stream>();
        for (int i = 0; i < 4; i++)
        {
            Socket socket = await RawHttp.ConnectAsync(_addresses[endpoint], receiveBufferSize: 16 * 1024);
            Stream stream = await OpenAsync(endpoint, socket);
            await stream.WriteAsync(Encoding.ASCII.GetBytes("GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n"));
            var one = new byte[1];
            await stream.ReadExactlyAsync(one);
            sockets.Add(socket);
            streams.Add(stream);
        }

        Task stopping = _app.StopAsync();
        Assert.Same(stopping, await Task.WhenAny(stopping, Task.Delay(TimeSpan.FromSeconds(30))));
        await stopping;

        // Every stalled connection ends: reads reach the end (or a reset).
        foreach (Stream stream in streams)
        {
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            var sink = new MemoryStream();
            await RawHttp.ReadToEndAsync(stream, sink, timeout.Token);
            Assert.True(sink.Length < BigLength);
        }

        foreach (Socket socket in sockets)
        {
            socket.Dispose();
        }

        await AssertStoppedCleanAsync();
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public async Task Truncation_mid_body_ends_the_connection_short(int endpoint)
    {
        string name = $"shrink-{Guid.NewGuid():N}.bin";
        byte[] original = _files.Create(name, 32 * 1024 * 1024);
        using Socket socket = await RawHttp.ConnectAsync(_addresses[endpoint], receiveBufferSize: 16 * 1024);
        using Stream stream = await OpenAsync(endpoint, socket);
        await stream.WriteAsync(Encoding.ASCII.GetBytes($"GET /{name} HTTP/1.1\r\nHost: x\r\n\r\nGET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n"));
        (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, CancellationToken.None);
        Assert.Equal(200, status);
        var received = new MemoryStream();
        received.Write(leftover);
        var chunk = new byte[16 * 1024];
        while (received.Length < 1024 * 1024)
        {
            int read = await stream.ReadAsync(chunk);
            Assert.NotEqual(0, read);
            received.Write(chunk, 0, read);
        }

        using (var writer = new FileStream(_files.PathOf(name), FileMode.Open, FileAccess.Write, FileShare.ReadWrite | FileShare.Delete))
        {
            writer.SetLength(8 * 1024 * 1024);
        }

        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        await RawHttp.ReadToEndAsync(stream, received, timeout.Token);
        Assert.True(received.Length < original.Length, $"received {received.Length}");
        Assert.True(received.ToArray().AsSpan().SequenceEqual(original.AsSpan(0, (int)received.Length)));
        await AssertCleanAsync();
    }

    // The app again, with other limits for one test.
    private async Task RestartAsync(TimeSpan? shutdownTimeout, MinDataRate? minResponseDataRate = null)
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
        _app = Build(shutdownTimeout, minResponseDataRate);
        _addresses = await CodeEndpoints.StartAsync(_app);
    }

    // After a stop: no file of the root open, every send-path block back, nothing logged at Error.
    private async Task AssertStoppedCleanAsync()
    {
        await OpenFileDescriptors.AssertNoneUnderAsync(_files.Root);
        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
        _logs.AssertNoErrors();
    }

    private async Task AssertCleanAsync()
    {
        LeakChecks.AssertTlsPoolHasNoDuplicates();

        // Each file at most once per file cache (the lane's root and UseFastFiles each keep one descriptor), none deleted.
        DateTime deadline = DateTime.UtcNow + TimeSpan.FromSeconds(10);
        IReadOnlyList<string> targets;
        while (!CachedOnly(targets = OpenFileDescriptors.TargetsUnder(_files.Root)) && DateTime.UtcNow < deadline)
        {
            await Task.Delay(50);
        }

        Assert.True(CachedOnly(targets), "open: " + string.Join(", ", targets));
        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
        _logs.AssertNoErrors();
        for (int e = 0; e < 4; e++)
        {
            using Socket socket = await RawHttp.ConnectAsync(_addresses[e]);
            using Stream stream = await OpenAsync(e, socket);
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            RawResponse response = await RawHttp.ExchangeAsync(stream, "/big.bin", timeout.Token);
            Assert.Equal(200, response.Status);
            Assert.True(_big.AsSpan().SequenceEqual(response.Body), $"endpoint {e}");
        }
    }

    [Theory]
    [InlineData(4)]
    [InlineData(5)]
    public async Task Http2_resets_and_goaway_mid_body_through_the_stage_leak_nothing(int endpoint)
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            for (int i = 0; i < 60; i++)
            {
                RawHttp2Client client = await RawHttp2Client.ConnectAsync(_addresses[endpoint], initialWindowSize: (uint)(i % 2 == 0 ? 65535 : 1 << 20), connectionWindowIncrement: 1 << 24, receiveBufferSize: 16 * 1024);
                await client.SendGetAsync(1, "/big.bin");
                await client.SendGetAsync(3, "/big.bin");
                long received = 0;
                while (received < (i % 3) * 20000)
                {
                    RawHttp2Client.Frame? frame = await client.ReadFrameAsync().WaitAsync(TimeSpan.FromSeconds(30));
                    if (frame is null)
                    {
                        break;
                    }

                    if (frame.Type == RawHttp2Client.Data)
                    {
                        received += frame.Payload.Length;
                    }
                }

                switch (i % 3)
                {
                    case 0:
                        await client.SendRstStreamAsync(1);
                        await client.SendRstStreamAsync(3);
                        client.ResetSocket();
                        break;
                    case 1:
                        await client.SendRstStreamAsync(1);
                        break;
                    default:
                        client.ResetSocket();
                        break;
                }

                await client.DisposeAsync();
            }

            await AssertCleanAsync();
        });
    }

    [Theory]
    [InlineData(4)]
    [InlineData(5)]
    public async Task Stop_with_http2_streams_stalled_on_flow_control_closes_after_the_shutdown_timeout(int endpoint)
    {
        await RestartAsync(TimeSpan.FromSeconds(1));
        var clients = new List<RawHttp2Client>();
        for (int i = 0; i < 4; i++)
        {
            RawHttp2Client client = await RawHttp2Client.ConnectAsync(_addresses[endpoint], initialWindowSize: (uint)(i % 2 == 0 ? 65535 : 1 << 24), connectionWindowIncrement: 1 << 24, receiveBufferSize: 16 * 1024);
            await client.SendGetAsync(1, "/big.bin");
            while ((await client.ReadFrameAsync().WaitAsync(TimeSpan.FromSeconds(30)))!.Type != RawHttp2Client.Data)
            {
            }

            clients.Add(client);
        }

        Task stopping = _app.StopAsync();
        Assert.Same(stopping, await Task.WhenAny(stopping, Task.Delay(TimeSpan.FromSeconds(30))));
        await stopping;
        foreach (RawHttp2Client client in clients)
        {
            client.ResetSocket();
            await client.DisposeAsync();
        }

        await OpenFileDescriptors.AssertNoneUnderAsync(_files.Root);
        _logs.AssertNoErrors();
        LeakChecks.AssertTlsPoolHasNoDuplicates();
    }

    private static bool CachedOnly(IReadOnlyList<string> targets)
        => targets.GroupBy(t => t, StringComparer.Ordinal).All(g => g.Count() <= 2) && !targets.Any(t => t.EndsWith(" (deleted)", StringComparison.Ordinal));

    [Theory]
    [InlineData(0, true)]
    [InlineData(0, false)]
    [InlineData(2, false)]
    [InlineData(6, false)]
    [InlineData(1, true)]
    public async Task A_client_that_stops_reading_is_cut_off_by_the_minimum_rate(int endpoint, bool big)
    {
        await RestartAsync(null, new MinDataRate(1024 * 1024, TimeSpan.FromSeconds(1.5)));
        using Socket socket = await RawHttp.ConnectAsync(_addresses[endpoint], receiveBufferSize: 16 * 1024);
        using Stream stream = await OpenAsync(endpoint, socket);
        var request = new StringBuilder();
        for (int i = 0; i < (big ? 1 : 20000); i++)
        {
            request.Append(big ? "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n" : "GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n");
        }

        Task writing = stream.WriteAsync(Encoding.ASCII.GetBytes(request.ToString())).AsTask();
        var one = new byte[1];
        await stream.ReadExactlyAsync(one);

        // Stop reading: the server must give up on this client within a few grace periods.
        await Task.Delay(TimeSpan.FromSeconds(5));
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        var sink = new MemoryStream();
        await RawHttp.ReadToEndAsync(stream, sink, timeout.Token);
        Assert.False(timeout.IsCancellationRequested, $"still open after {sink.Length} more bytes");
        Assert.True(sink.Length < (big ? BigLength : 20000L * 1000), $"read {sink.Length}");
        try
        {
            await writing;
        }
        catch (IOException)
        {
        }
    }

    private static HttpClient H2cClient(int window) => new(new SocketsHttpHandler { InitialHttp2StreamWindowSize = window, AutomaticDecompression = DecompressionMethods.None })
    {
        DefaultRequestVersion = HttpVersion.Version20,
        DefaultVersionPolicy = HttpVersionPolicy.RequestVersionExact,
    };

    [Fact]
    public async Task H2c_on_the_send_path_cancels_and_closes_mid_body_leak_nothing()
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            for (int i = 0; i < 60; i++)
            {
                using HttpClient client = H2cClient(i % 2 == 0 ? 65535 : 1 << 20);
                using var cts = new CancellationTokenSource();
                Task<HttpResponseMessage>[] requests = Enumerable.Range(0, 3).Select(_ => client.GetAsync(new Uri(_addresses[7], "/big.bin"), HttpCompletionOption.ResponseHeadersRead, cts.Token)).ToArray();
                HttpResponseMessage first = await requests[0];
                Stream body = await first.Content.ReadAsStreamAsync();
                var chunk = new byte[16 * 1024];
                int got = 0;
                while (got < (i % 4) * 30000)
                {
                    int read = await body.ReadAsync(chunk);
                    if (read == 0)
                    {
                        break;
                    }

                    got += read;
                }

                if (i % 2 == 0)
                {
                    await cts.CancelAsync();
                }

                first.Dispose();
                foreach (Task<HttpResponseMessage> request in requests)
                {
                    try
                    {
                        (await request).Dispose();
                    }
                    catch (Exception ex) when (ex is OperationCanceledException or HttpRequestException)
                    {
                    }
                }
            }

            await AssertCleanAsync();
            using (HttpClient client = H2cClient(1 << 20))
            {
                Assert.Equal(_big, await client.GetByteArrayAsync(new Uri(_addresses[7], "/big.bin")));
            }
        });
    }

    [Fact]
    public async Task Stop_with_h2c_streams_stalled_on_the_send_path_closes_after_the_shutdown_timeout()
    {
        await RestartAsync(TimeSpan.FromSeconds(1));
        var clients = new List<HttpClient>();
        var bodies = new List<Stream>();
        for (int i = 0; i < 4; i++)
        {
            HttpClient client = H2cClient(i % 2 == 0 ? 65535 : 1 << 22);
            HttpResponseMessage response = await client.GetAsync(new Uri(_addresses[7], "/big.bin"), HttpCompletionOption.ResponseHeadersRead);
            bodies.Add(await response.Content.ReadAsStreamAsync());
            clients.Add(client);
        }

        Task stopping = _app.StopAsync();
        Assert.Same(stopping, await Task.WhenAny(stopping, Task.Delay(TimeSpan.FromSeconds(30))));
        await stopping;
        foreach (HttpClient client in clients)
        {
            client.Dispose();
        }

        await AssertStoppedCleanAsync();
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    [InlineData(6)]
    public async Task The_app_aborting_mid_body_leaks_nothing(int endpoint)
    {
        for (int i = 0; i < 40; i++)
        {
            using Socket socket = await RawHttp.ConnectAsync(_addresses[endpoint], receiveBufferSize: 16 * 1024);
            using Stream stream = await OpenAsync(endpoint, socket);
            await stream.WriteAsync(Encoding.ASCII.GetBytes($"GET /abort/big.bin?ms={i % 5} HTTP/1.1\r\nHost: x\r\n\r\nGET /small.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
            var sink = new MemoryStream();
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            if (i % 2 == 0)
            {
                // A slow reader: the abort finds the body waiting for the socket.
                await Task.Delay(20);
            }

            try
            {
                await RawHttp.ReadToEndAsync(stream, sink, timeout.Token);
            }
            catch (OperationCanceledException)
            {
            }

            Assert.False(timeout.IsCancellationRequested, $"iteration {i}: still open after {sink.Length} bytes: {Encoding.ASCII.GetString(sink.ToArray(), 0, (int)Math.Min(300, sink.Length))}");
            // The body arrived whole (the abort came too late) or the connection ended inside it.
            byte[] received = sink.ToArray();
            int end = RawHttp.IndexOfHeaderEnd([.. received.AsSpan(0, Math.Min(received.Length, 512))]);
            int head = end < 0 ? received.Length : end + 4;
            int body = Math.Min(received.Length - head, BigLength);
            Assert.True(received.AsSpan(head, body).SequenceEqual(_big.AsSpan(0, body)), $"iteration {i}: the body is not a prefix of the file");
        }

        await AssertCleanAsync();
    }

    [Theory]
    [InlineData(0, "")]
    [InlineData(1, "")]
    [InlineData(1, "/stockfast")]
    [InlineData(1, "/fastresult")]
    [InlineData(3, "/fastresult")]
    [InlineData(6, "")]
    public async Task A_file_replaced_by_rename_mid_body_gives_the_old_bytes(int endpoint, string prefix)
    {
        string name = $"replaced-{Guid.NewGuid():N}.bin";
        byte[] original = _files.Create(name, 32 * 1024 * 1024, seed: 7);
        using Socket socket = await RawHttp.ConnectAsync(_addresses[endpoint], receiveBufferSize: 16 * 1024);
        using Stream stream = await OpenAsync(endpoint, socket);
        await stream.WriteAsync(Encoding.ASCII.GetBytes($"GET {prefix}/{name} HTTP/1.1\r\nHost: x\r\n\r\n"));
        (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, CancellationToken.None);
        Assert.Equal(200, status);
        Assert.Equal(original.Length.ToString(System.Globalization.CultureInfo.InvariantCulture), headers["Content-Length"]);
        var received = new MemoryStream();
        received.Write(leftover);
        var chunk = new byte[16 * 1024];
        while (received.Length < 1024 * 1024)
        {
            int read = await stream.ReadAsync(chunk);
            Assert.NotEqual(0, read);
            received.Write(chunk, 0, read);
        }

        string temp = _files.PathOf(name + ".new");
        File.WriteAllBytes(temp, new byte[3 * 1024 * 1024]);
        File.Move(temp, _files.PathOf(name), overwrite: true);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        while (received.Length < original.Length)
        {
            int read = await stream.ReadAsync(chunk, timeout.Token);
            if (read == 0)
            {
                break;
            }

            received.Write(chunk, 0, read);
        }

        // Whole and old, or cut short (never mixed, never padded).
        Assert.True(received.ToArray().AsSpan().SequenceEqual(original.AsSpan(0, (int)received.Length)), "the body is not a prefix of the old file");
        Assert.Equal(original.Length, received.Length);
        await AssertCleanAsync();
    }
}
