using System.Diagnostics.Metrics;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Text;
using FastFiles.Diagnostics;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.FunctionalTests.Connections;

public sealed class Http2TlsOutputStageTests : IDisposable
{
    private static readonly int[] Sizes = [0, 1, 100, 4095, 16384, 16385, 65536, 100_000, 1024 * 1024 + 3, 5 * 1024 * 1024];
    private readonly SizedFiles _sized = new(Sizes);
    private readonly ServerProbe _probe = new();

    public void Dispose() => _sized.Dispose();

    private async Task<(TestHost Host, Http2TlsOutputStageOptions Stage)> StartAsync(
        Action<Http2TlsOutputStageOptions>? configureStage = null,
        Action<KestrelServerOptions>? configureKestrel = null,
        Action<ListenOptions>? configureH2c = null)
    {
        Http2TlsOutputStageOptions? stage = null;
        TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureKestrel: configureKestrel,
            configureTls: l => l.UseHttp2TlsOutputStage(o =>
            {
                configureStage?.Invoke(o);
                stage = o;
            }),
            configureH2c: configureH2c);
        return (host, stage!);
    }

    [Fact]
    public async Task Http2_many_concurrent_streams_of_mixed_sizes_arrive_intact()
    {
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync();
        await using TestHost _ = host;

        // 300 requests over HttpClient's single h2 connection: more than Kestrel's 100 concurrent streams.
        Task[] requests = Enumerable.Range(0, 300).Select(i => _sized.AssertServedAsync(host, Transport.H2Tls, Sizes[i % Sizes.Length])).ToArray();
        await Task.WhenAll(requests);

        long total = Enumerable.Range(0, 300).Sum(i => (long)Sizes[i % Sizes.Length]);
        Assert.Equal(1, stage.Statistics.ConnectionsStaged);
        Assert.True(stage.Statistics.BytesForwarded > total, $"forwarded {stage.Statistics.BytesForwarded} of at least {total}");
    }

    [Fact]
    public async Task Http11_over_tls_is_staged_in_AllProtocols_mode()
    {
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync(o => o.Mode = Http2TlsOutputStageMode.AllProtocols);
        await using TestHost _ = host;

        foreach (int size in Sizes)
        {
            await _sized.AssertServedAsync(host, Transport.Http11Tls, size);
        }

        await Task.WhenAll(Enumerable.Range(0, 20).Select(i => _sized.AssertServedAsync(host, Transport.Http11Tls, Sizes[i % Sizes.Length])));
        Assert.True(stage.Statistics.ConnectionsStaged >= 1);
        Assert.Equal(0, stage.Statistics.ConnectionsPassedThrough);
    }

    [Fact]
    public async Task Default_mode_stages_h2_and_passes_http11_over_tls_through()
    {
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync();
        await using TestHost _ = host;

        Assert.Equal(Http2TlsOutputStageMode.Http2Only, stage.Mode);
        await _sized.AssertServedAsync(host, Transport.Http11Tls, 100_000);
        Assert.Equal(0, stage.Statistics.ConnectionsStaged);
        Assert.Equal(1, stage.Statistics.ConnectionsPassedThrough);

        await _sized.AssertServedAsync(host, Transport.H2Tls, 100_000);
        Assert.Equal(1, stage.Statistics.ConnectionsStaged);
    }

    [Fact]
    public async Task H2c_endpoint_with_the_stage_is_passed_through_unchanged()
    {
        Http2TlsOutputStageOptions? h2cStage = null;
        (TestHost host, Http2TlsOutputStageOptions _) = await StartAsync(configureH2c: l => l.UseHttp2TlsOutputStage(o =>
        {
            o.Mode = Http2TlsOutputStageMode.AllProtocols;
            h2cStage = o;
        }));
        await using TestHost h = host;

        await Task.WhenAll(Sizes.Select(size => _sized.AssertServedAsync(host, Transport.H2c, size)));
        Assert.Equal(0, h2cStage!.Statistics.ConnectionsStaged);
        Assert.Equal(1, h2cStage.Statistics.ConnectionsPassedThrough);
    }

    [Fact]
    public async Task Code_endpoint_uses_the_options_given_to_UseFastFilesConnections()
    {
        Http2TlsOutputStageOptions? stage = null;
        // The TLS endpoint is configured before UseFastFilesConnections runs: the options are looked up when the endpoint starts.
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureKestrel: k => k.UseFastFilesConnections(o =>
            {
                o.EnableHttp2TlsOutputStage = true;
                o.Http2TlsOutputStage.Mode = Http2TlsOutputStageMode.AllProtocols;
                stage = o.Http2TlsOutputStage;
            }),
            configureTls: l => l.UseHttp2TlsOutputStage());

        await _sized.AssertServedAsync(host, Transport.Http11Tls, 100_000);
        await _sized.AssertServedAsync(host, Transport.H2Tls, 100_000);
        Assert.Equal(2, stage!.Statistics.ConnectionsStaged);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ListenOptions_UseFastFiles_adds_the_stage_only_when_enabled(bool enabled)
    {
        Http2TlsOutputStageOptions? stage = null;
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureKestrel: k => k.UseFastFilesConnections(o =>
            {
                o.EnableHttp2TlsOutputStage = enabled;
                stage = o.Http2TlsOutputStage;
            }),
            configureTls: l => l.UseFastFilesConnections());

        await _sized.AssertServedAsync(host, Transport.H2Tls, 100_000);
        // The stage counts every connection it sees; when it is not installed it sees none.
        Assert.Equal(enabled ? 1 : 0, stage!.Statistics.ConnectionsStaged);
    }

    [Fact]
    public async Task Disabled_mode_installs_nothing()
    {
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync(o => o.Mode = Http2TlsOutputStageMode.Disabled);
        await using TestHost _ = host;

        await _sized.AssertServedAsync(host, Transport.H2Tls, 65536);
        Assert.Equal(0, stage.Statistics.ConnectionsStaged + stage.Statistics.ConnectionsPassedThrough);
    }

    [Fact]
    public async Task Client_reset_mid_stream_leaves_the_connection_usable()
    {
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync();
        await using TestHost _ = host;

        for (int i = 0; i < 5; i++)
        {
            using (HttpResponseMessage response = await host.Client.SendAsync(host.Request(Transport.H2Tls, "/stream/67108864"), HttpCompletionOption.ResponseHeadersRead))
            {
                await using Stream body = await response.Content.ReadAsStreamAsync();
                byte[] some = new byte[100_000];
                await body.ReadExactlyAsync(some);
                Assert.Equal(StageTestApp.Pattern.AsSpan(0, some.Length).ToArray(), some);
            }

            // Disposing the unfinished response sent RST_STREAM; the server must notice and the connection must go on.
            await _probe.StreamAborted.Task.WaitAsync(TimeSpan.FromSeconds(30));
            await _sized.AssertServedAsync(host, Transport.H2Tls, 1024 * 1024 + 3);
        }

        Assert.Equal(1, stage.Statistics.ConnectionsStaged);
    }

    [Fact]
    public async Task Graceful_shutdown_completes_in_flight_responses()
    {
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync();
        // Kestrel stops reading once its last stream is done, and a socket closed with unread input is reset, which
        // can cost the client bytes it has not read yet (stock Kestrel too). So this client sends nothing during the
        // tail: stream windows larger than a body, and less data in all than SocketsHttpHandler's connection-window
        // update threshold.
        using var client = new HttpClient(new SocketsHttpHandler
        {
            InitialHttp2StreamWindowSize = 16 * 1024 * 1024,
            SslOptions = { RemoteCertificateValidationCallback = (_, cert, _, _) => cert is not null && cert.GetCertHashString() == TestCertificate.Instance.GetCertHashString() },
        });
        try
        {
            const int Count = 30;
            Task<byte[]>[] downloads = Enumerable.Range(0, Count).Select(async _ =>
            {
                using HttpResponseMessage response = await client.SendAsync(host.Request(Transport.H2Tls, "/gated"), HttpCompletionOption.ResponseHeadersRead);
                return await response.Content.ReadAsByteArrayAsync();
            }).ToArray();

            using (var started = new CancellationTokenSource(TimeSpan.FromSeconds(60)))
            {
                while (_probe.GatedStarted < Count)
                {
                    Assert.DoesNotContain(downloads, d => d.IsFaulted);
                    await Task.Delay(20, started.Token);
                }
            }

            // Stop while every response is partly written; the gate opens only once Kestrel is already shutting down.
            Task stop = host.StopAsync();
            await Task.Delay(300);
            Assert.False(stop.IsCompleted);
            _probe.Gate.SetResult();

            byte[][] bodies = await Task.WhenAll(downloads).WaitAsync(TimeSpan.FromSeconds(60));
            await stop.WaitAsync(TimeSpan.FromSeconds(60));
            string expected = TestFiles.Sha256(StageTestApp.Pattern.AsSpan(0, StageTestApp.GatedLength).ToArray());
            Assert.All(bodies, b => Assert.Equal(expected, TestFiles.Sha256(b)));
            Assert.Equal(1, stage.Statistics.ConnectionsStaged);
        }
        finally
        {
            _probe.Gate.TrySetResult();
            await host.DisposeAsync();
        }
    }

    // 128 MiB: four times the body. 2 GiB: with Kestrel's default MinResponseDataRate (240 B/s) the tail's grace period
    // is more than a timer can wait (Task.WaitAsync throws past about 49.7 days); the tail must still arrive whole.
    [Theory]
    [InlineData(128L * 1024 * 1024)]
    [InlineData(2L * 1024 * 1024 * 1024)]
    public async Task Tail_still_in_the_stage_when_the_connection_ends_reaches_the_client(long bound)
    {
        // A bound far above the body lets Kestrel finish the response, and close the connection (Connection: close),
        // while most of the body still waits in the stage's pipe behind a client that has not read yet. TLS must not be
        // disposed under the stage before it has sent all of that. The sockets and Kestrel's transport pipe take up to
        // about 8 MiB of a body nobody reads (a send buffer autotuned to tcp_wmem's 4 MiB maximum), so 32 MiB leaves
        // most of it in the stage.
        const int Length = 32 * 1024 * 1024;
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync(o =>
        {
            o.Mode = Http2TlsOutputStageMode.AllProtocols;
            o.MaxBufferSize = bound;
        });
        await using TestHost _ = host;

        (TcpClient tcpClient, SslStream tlsStream) = await TestCertificate.ConnectHttp11Async(host.Https.Port);
        using TcpClient tcp = tcpClient;
        await using SslStream tls = tlsStream;
        await tls.WriteAsync(Encoding.ASCII.GetBytes($"GET /stream/{Length} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));

        // Only once the server is done with the response (and so is about to end the connection) does the client read.
        await _probe.StreamCompleted.Task.WaitAsync(TimeSpan.FromSeconds(60));
        await Task.Delay(500);
        using var received = new MemoryStream();
        await tls.CopyToAsync(received).WaitAsync(TimeSpan.FromSeconds(60));

        ReadOnlySpan<byte> body = OkBody(received.ToArray());
        Assert.Equal(Length, body.Length);
        for (int offset = 0; offset < Length; offset += StageTestApp.Pattern.Length)
        {
            int count = Math.Min(StageTestApp.Pattern.Length, Length - offset);
            Assert.True(body.Slice(offset, count).SequenceEqual(StageTestApp.Pattern.AsSpan(0, count)), $"bytes differ in [{offset}, {offset + count})");
        }

        // The premise: the tail really was queued in the stage while Kestrel finished.
        Assert.True(stage.Statistics.PeakBufferedBytes > Length / 2, $"peak buffered {stage.Statistics.PeakBufferedBytes}");
    }

    /// <summary>
    /// Kestrel's MaxResponseBufferSize = 0 ("no buffering") is a valid limit: an endpoint with the stage starts with it,
    /// bounds the stage at one byte, and serves a body whole.
    /// </summary>
    [Fact]
    public async Task Kestrel_buffering_nothing_bounds_the_stage_at_one_byte()
    {
        const int Length = 1024 * 1024;
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync(
            o => o.Mode = Http2TlsOutputStageMode.AllProtocols,
            k => k.Limits.MaxResponseBufferSize = 0);
        await using TestHost _ = host;

        (TcpClient tcpClient, SslStream tlsStream) = await TestCertificate.ConnectHttp11Async(host.Https.Port);
        using TcpClient tcp = tcpClient;
        await using SslStream tls = tlsStream;
        await tls.WriteAsync(Encoding.ASCII.GetBytes($"GET /stream/{Length} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
        using var received = new MemoryStream();
        await tls.CopyToAsync(received).WaitAsync(TimeSpan.FromSeconds(60));

        Assert.True(OkBody(received.ToArray()).AsSpan().SequenceEqual(StageTestApp.Pattern.AsSpan(0, Length)), "the body differs");
        Assert.Equal(1, stage.Statistics.ConnectionsStaged);
    }

    // The body of the one HTTP/1.1 200 a Connection: close exchange returned.
    private static byte[] OkBody(byte[] response)
    {
        int headerEnd = response.AsSpan().IndexOf("\r\n\r\n"u8);
        Assert.True(headerEnd > 0, "no response head");
        Assert.StartsWith("HTTP/1.1 200", Encoding.ASCII.GetString(response, 0, headerEnd));
        return response[(headerEnd + 4)..];
    }

    [Fact]
    public async Task Stage_reports_decisions_and_bytes_as_metrics()
    {
        (TestHost host, Http2TlsOutputStageOptions _) = await StartAsync();
        await using TestHost h = host;
        IMeterFactory factory = host.Services.GetRequiredService<IMeterFactory>();
        const string Decision = "fastfiles.tls_stage.decision";
        using var staged = new InstrumentRecorder(factory, "fastfiles.tls_stage.connections", new(Decision, "staged"));
        using var passedThrough = new InstrumentRecorder(factory, "fastfiles.tls_stage.connections", new(Decision, "passed_through"));
        using var forwarded = new InstrumentRecorder(factory, "fastfiles.tls_stage.forwarded");
        using var buffered = new InstrumentRecorder(factory, "fastfiles.tls_stage.buffered");

        await _sized.AssertServedAsync(host, Transport.H2Tls, 100_000);
        await _sized.AssertServedAsync(host, Transport.Http11Tls, 100);
        await host.StopAsync();

        Assert.Equal(1, staged.Total);
        Assert.Equal(1, passedThrough.Total);
        Assert.True(forwarded.Total > 100_000, $"forwarded {forwarded.Total}");
        // Every byte Kestrel put into the stage left it again once the connection was over.
        Assert.Equal(0, buffered.Total);
    }

    [Fact]
    public async Task Client_that_stops_reading_keeps_server_memory_bounded_and_is_disconnected()
    {
        const long Length = 256L * 1024 * 1024;
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync(configureKestrel: k =>
            k.Limits.MinResponseDataRate = new MinDataRate(bytesPerSecond: 1024 * 1024, gracePeriod: TimeSpan.FromSeconds(2)));
        await using TestHost _ = host;
        long bound = host.ServerLimits().MaxResponseBufferSize!.Value;

        await using RawHttp2Client client = await RawHttp2Client.ConnectAsync(host.Https, initialWindowSize: int.MaxValue, connectionWindowIncrement: int.MaxValue - 65535, receiveBufferSize: 4096);
        await client.SendGetAsync(1, $"/stream/{Length}");

        // Read until the body starts, then stop reading the socket entirely.
        long received = 0;
        while (received == 0)
        {
            RawHttp2Client.Frame frame = (await client.ReadFrameAsync())!;
            if (frame.Type == RawHttp2Client.Data)
            {
                received += frame.Payload.Length;
            }
        }

        // Kestrel's MinResponseDataRate rule must end the response, and so the connection.
        await _probe.StreamAborted.Task.WaitAsync(TimeSpan.FromSeconds(60));

        // Drain what the sockets held: the connection must end well before the whole body.
        try
        {
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            while (await client.ReadFrameAsync(cts.Token) is { } frame)
            {
                if (frame.Type == RawHttp2Client.Data)
                {
                    received += frame.Payload.Length;
                }
            }
        }
        catch (IOException)
        {
            // Reset by the server: also an end.
        }

        Assert.True(received < Length / 4, $"received {received}");
        Assert.True(_probe.StreamBytesFlushed < Length / 4, $"app flushed {_probe.StreamBytesFlushed}");
        AssertBounded(stage, bound);
        Console.WriteLine($"slow reader: peak {stage.Statistics.PeakBufferedBytes}, largest batch {stage.Statistics.LargestFlushBatch}, bound {bound}, received {received}");
    }

    [Fact]
    public async Task Client_that_never_opens_its_window_cannot_make_the_server_buffer()
    {
        const long Length = 256L * 1024 * 1024;
        (TestHost host, Http2TlsOutputStageOptions stage) = await StartAsync();
        await using TestHost _ = host;
        long bound = host.ServerLimits().MaxResponseBufferSize!.Value;

        await using RawHttp2Client client = await RawHttp2Client.ConnectAsync(host.Https, initialWindowSize: 0, connectionWindowIncrement: 0);
        await client.SendGetAsync(1, $"/stream/{Length}");
        var reader = Task.Run(async () =>
        {
            long data = 0;
            try
            {
                while (await client.ReadFrameAsync() is { } frame)
                {
                    if (frame.Type == RawHttp2Client.Data)
                    {
                        data += frame.Payload.Length;
                    }
                    else if (frame.Type == RawHttp2Client.Settings && (frame.Flags & 0x1) == 0)
                    {
                        await client.SendSettingsAckAsync();
                    }
                }
            }
            catch (Exception ex) when (ex is IOException or ObjectDisposedException)
            {
                // The test closed the client.
            }

            return data;
        });

        // The app's flush must block once Kestrel's per-stream buffer is full; nothing can reach the wire.
        await _probe.FirstBlockedFlush.Task.WaitAsync(TimeSpan.FromSeconds(30));
        long flushedWhenBlocked = _probe.StreamBytesFlushed;
        Assert.True(flushedWhenBlocked <= bound + StageTestApp.ChunkSize, $"app flushed {flushedWhenBlocked} with a closed window");

        // The client gives up: the response must fail on the server and the stage must not have held the body.
        await client.SendRstStreamAsync(1);
        await _probe.StreamAborted.Task.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.True(_probe.StreamBytesFlushed <= bound + StageTestApp.ChunkSize);
        Assert.Equal(1, stage.Statistics.ConnectionsStaged);
        Assert.True(stage.Statistics.PeakBufferedBytes < 4096, $"peak {stage.Statistics.PeakBufferedBytes}");
        await client.DisposeAsync();
        Assert.Equal(0, await reader.WaitAsync(TimeSpan.FromSeconds(30)));
    }

    private static void AssertBounded(Http2TlsOutputStageOptions stage, long bound)
    {
        Http2TlsOutputStageStatistics s = stage.Statistics;
        Assert.Equal(1, s.ConnectionsStaged);
        // The pipe pauses Kestrel's flush at the bound, so at most one batch of frames can sit on top of it.
        Assert.True(s.PeakBufferedBytes < bound + s.LargestFlushBatch, $"peak {s.PeakBufferedBytes}, bound {bound}, batch {s.LargestFlushBatch}");
        Assert.True(s.PeakBufferedBytes <= 3 * bound, $"peak {s.PeakBufferedBytes}, bound {bound}");
    }
}
