using System.Diagnostics.Metrics;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>TLS record coalescing over real TLS sockets: every byte arrives, in order, on HTTP/2 and HTTP/1.1.</summary>
public sealed class TlsRecordCoalescingTests : IDisposable
{
    private static readonly int[] Sizes = [0, 1, 100, 4095, 4096, 4097, 16383, 16384, 16385, 65536, 100_000, 1024 * 1024 + 3];
    private readonly SizedFiles _sized = new(Sizes);
    private readonly ServerProbe _probe = new();

    public void Dispose() => _sized.Dispose();

    // On the TLS endpoint after UseHttps, and on the h2c endpoint, where it must pass connections through.
    private Task<TestHost> StartAsync()
        => TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureTls: l => l.UseTlsRecordCoalescing(),
            configureH2c: l => l.UseTlsRecordCoalescing());

    [Theory]
    [InlineData(Transport.H2Tls)]
    [InlineData(Transport.Http11Tls)]
    [InlineData(Transport.H2c)]
    public async Task Concurrent_responses_of_every_size_arrive_intact(Transport transport)
    {
        await using TestHost host = await StartAsync();

        await Task.WhenAll(Enumerable.Range(0, 120).Select(i => _sized.AssertServedAsync(host, transport, Sizes[i % Sizes.Length])));
    }

    [Theory]
    [InlineData(Transport.H2Tls)]
    [InlineData(Transport.Http11Tls)]
    public async Task With_the_stage_behind_it_responses_arrive_intact(Transport transport)
    {
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureTls: l => l.UseTlsRecordCoalescing().UseHttp2TlsOutputStage(o => o.Mode = Http2TlsOutputStageMode.AllProtocols));

        await Task.WhenAll(Enumerable.Range(0, 60).Select(i => _sized.AssertServedAsync(host, transport, Sizes[i % Sizes.Length])));
    }

    /// <summary>
    /// An app's write cancelled by its own token while it waits for a client that does not read, then one more write.
    /// A cancelled write may have gone out whole or not at all (Kestrel may refuse it before it reaches the connection,
    /// or the cancel may come once its bytes are in the socket), or the connection ends part-way through it (Kestrel
    /// aborts when its writer's flush throws). Never a hole followed by more bytes: the writer used to report a cancel
    /// part-way as IsCanceled and drop the rest of the write, and the next write then followed the hole on a connection
    /// that went on.
    /// </summary>
    [Theory]
    [InlineData(false, false)]
    [InlineData(false, true)]
    [InlineData(true, false)]
    public async Task A_write_cancelled_by_the_apps_token_ends_the_connection_with_no_hole(bool stage, bool chunked)
    {
        const int BlockSize = 64 * 1024;
        const int Last = 255;
        var app = new TaskCompletionSource<int>(TaskCreationOptions.RunContinuationsAsynchronously);
        await using TestHost host = await TestHost.StartAsync(
            a => a.MapGet("/cancel", async (HttpContext context) =>
            {
                if (!chunked)
                {
                    context.Response.ContentLength = (Last + 1L) * BlockSize;
                }

                int cancelled = -1;
                for (int i = 0; i < Last && cancelled < 0; i++)
                {
                    using var cts = new CancellationTokenSource();
                    ValueTask write = context.Response.Body.WriteAsync(Block(i), cts.Token);
                    if (!write.IsCompleted)
                    {
                        // This write is waiting for the client (which does not read): cancel it part-way. Should it
                        // still complete first, the next write gets its own token and the next chance.
                        await cts.CancelAsync();
                    }

                    try
                    {
                        await write;
                    }
                    catch (OperationCanceledException)
                    {
                        cancelled = i;
                    }
                }

                app.TrySetResult(cancelled);
                try
                {
                    await context.Response.Body.WriteAsync(Block(Last));
                }
                catch (Exception ex) when (ex is OperationCanceledException or IOException or InvalidOperationException)
                {
                }
            }),
            configureTls: stage
                ? l => l.UseTlsRecordCoalescing().UseHttp2TlsOutputStage(o => o.Mode = Http2TlsOutputStageMode.AllProtocols)
                : l => l.UseTlsRecordCoalescing());

        using var tcp = new TcpClient { ReceiveBufferSize = 4096 };
        await tcp.ConnectAsync(IPAddress.Loopback, host.Https.Port);
        await using var tls = new SslStream(tcp.GetStream(), false, (_, _, _, _) => true);
        await tls.AuthenticateAsClientAsync(new SslClientAuthenticationOptions { TargetHost = "localhost", ApplicationProtocols = [SslApplicationProtocol.Http11] });
        await tls.WriteAsync(Encoding.ASCII.GetBytes("GET /cancel HTTP/1.1\r\nHost: localhost\r\n\r\n"));

        // Not reading until a write was cancelled: the app's writes wait for the client.
        int cancelled = await app.Task.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.True(cancelled >= 0, "no write was cancelled");

        // Read to the end of the connection or, on one that goes on, to the end of the chunked body. A Content-Length
        // response short of its length always ends the connection.
        var received = new MemoryStream();
        byte[] buffer = new byte[64 * 1024];
        bool complete = false;
        try
        {
            int n;
            using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            while (!(complete = chunked && received.Length >= 5 && received.GetBuffer().AsSpan(0, (int)received.Length).EndsWith("0\r\n\r\n"u8))
                && (n = await tls.ReadAsync(buffer, bound.Token)) > 0)
            {
                received.Write(buffer, 0, n);
            }
        }
        catch (IOException)
        {
            // A reset after an abort.
        }

        byte[] bytes = received.ToArray();
        int head = bytes.AsSpan().IndexOf("\r\n\r\n"u8);
        if (head < 0)
        {
            // A reset may discard what the client had not read yet.
            Assert.True(bytes.Length < 4096, "bytes without a response head");
            return;
        }

        byte[] body = bytes[(head + 4)..];
        if (chunked)
        {
            body = RawHttp.Dechunk(body, out _);
        }

        // The cancelled write whole or absent, then the last one; or a prefix of either, when the connection ended.
        byte[] withIt = Enumerable.Range(0, cancelled + 1).Append(Last).SelectMany(Block).ToArray();
        byte[] withoutIt = Enumerable.Range(0, cancelled).Append(Last).SelectMany(Block).ToArray();
        bool Fits(byte[] expected) => complete ? body.AsSpan().SequenceEqual(expected) : body.Length <= expected.Length && body.AsSpan().SequenceEqual(expected.AsSpan(0, body.Length));
        Assert.True(Fits(withIt) || Fits(withoutIt), $"{body.Length} body bytes (complete: {complete}) are not the writes up to the cancelled one ({cancelled}), whole or absent, then the last: a hole");

        static byte[] Block(int index)
        {
            byte[] block = new byte[BlockSize];
            block.AsSpan().Fill((byte)(index + 1));
            return block;
        }
    }

    [Fact]
    public async Task Client_that_stops_reading_is_disconnected_by_the_data_rate_rules()
    {
        // The writer's flush waits on SslStream; Kestrel's abort must still reach it and end the response.
        const long Length = 256L * 1024 * 1024;
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureKestrel: k => k.Limits.MinResponseDataRate = new MinDataRate(bytesPerSecond: 1024 * 1024, gracePeriod: TimeSpan.FromSeconds(2)),
            configureTls: l => l.UseTlsRecordCoalescing());

        await using RawHttp2Client client = await RawHttp2Client.ConnectAsync(host.Https, initialWindowSize: int.MaxValue, connectionWindowIncrement: int.MaxValue - 65535, receiveBufferSize: 4096);
        await client.SendGetAsync(1, $"/stream/{Length}");
        while ((await client.ReadFrameAsync())!.Type != RawHttp2Client.Data)
        {
        }

        // Not reading any more: the response must be aborted rather than hang or buffer the body.
        await _probe.StreamAborted.Task.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.True(_probe.StreamBytesFlushed < Length / 4, $"app flushed {_probe.StreamBytesFlushed}");
        Assert.False(_probe.StreamCompleted.Task.IsCompleted);
    }

    [Fact]
    public async Task Streamed_response_with_flushes_between_writes_arrives_in_order()
    {
        await using TestHost host = await StartAsync();
        const int Length = 3 * 1024 * 1024 + 17;

        foreach (Transport transport in TransportMatrix.Tls)
        {
            using HttpResponseMessage response = await host.SendAsync(transport, $"/stream/{Length}");
            byte[] body = await response.Content.ReadAsByteArrayAsync();
            Assert.Equal(Length, body.Length);
            for (int offset = 0; offset < Length; offset += StageTestApp.Pattern.Length)
            {
                int count = Math.Min(StageTestApp.Pattern.Length, Length - offset);
                Assert.True(body.AsSpan(offset, count).SequenceEqual(StageTestApp.Pattern.AsSpan(0, count)), $"{transport}: bytes differ in [{offset}, {offset + count})");
            }
        }
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task ListenOptions_UseFastFiles_adds_coalescing_inside_tls_only_when_enabled(bool enabled)
    {
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureKestrel: k => k.UseFastFilesConnections(o => o.EnableTlsRecordCoalescing = enabled),
            configureTls: l => l.UseFastFilesConnections(),
            configureH2c: l => l.UseFastFilesConnections());
        using var coalesced = new InstrumentRecorder(host.Services.GetRequiredService<IMeterFactory>(), "fastfiles.tls_records.coalesced_connections");

        await _sized.AssertServedAsync(host, Transport.H2Tls, 100_000);
        await _sized.AssertServedAsync(host, Transport.Http11Tls, 100_000);
        await _sized.AssertServedAsync(host, Transport.H2c, 100_000);

        // Two TLS connections; the h2c one has no TLS and is passed through.
        Assert.Equal(enabled ? 2 : 0, coalesced.Total);
    }
}

