using System.Buffers;
using System.IO.Pipelines;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Text;
using FastFiles.Connections;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// What the HTTP/2 TLS output stage really holds in memory for a slow reader, counted at the source (the stage pipe's
/// pool blocks, and the plaintext the stage has handed to the TLS writer that is not flushed yet); resets and
/// CancelPendingFlush through the stage.
/// </summary>
public sealed class Http2TlsOutputStageHoldingTests : IDisposable
{
    private static readonly int[] Sizes = [100];
    private readonly SizedFiles _sized = new(Sizes);
    private readonly ServerProbe _probe = new();

    public void Dispose() => _sized.Dispose();

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Slow_reader_holds_at_most_one_bound_in_the_stage(bool coalescing)
    {
        const long Bound = 1024 * 1024;
        var held = new HeldBytes();
        Http2TlsOutputStageOptions? stage = null;
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureKestrel: k => k.Limits.MinResponseDataRate = null,
            configureTls: l =>
            {
                if (coalescing)
                {
                    l.UseTlsRecordCoalescing();
                }

                // Outside the stage: count what it hands to TLS, and give it (only it) a counting pool.
                l.Use(next => async context =>
                {
                    IDuplexPipe tls = context.Transport;
                    IMemoryPoolFeature? original = context.Features.Get<IMemoryPoolFeature>();
                    var writer = new HeldTlsWriter(tls.Output, held);
                    context.Transport = new Duplex(tls.Input, writer);
                    context.Features.Set<IMemoryPoolFeature>(new PoolFeature(new CountingPool(original?.MemoryPool ?? MemoryPool<byte>.Shared, held)));
                    context.Items["review.pool"] = original;
                    try
                    {
                        await next(context);
                    }
                    finally
                    {
                        context.Transport = tls;
                        context.Features.Set(original);
                    }
                });
                l.UseHttp2TlsOutputStage(o =>
                {
                    o.MaxBufferSize = Bound;
                    stage = o;
                });

                // Inside the stage: Kestrel's HTTP layer gets the connection's own pool back.
                l.Use(next => context =>
                {
                    context.Features.Set((IMemoryPoolFeature?)context.Items["review.pool"]);
                    return next(context);
                });
            });

        await using RawHttp2Client client = await RawHttp2Client.ConnectAsync(host.Https, initialWindowSize: int.MaxValue, connectionWindowIncrement: int.MaxValue - 65535, receiveBufferSize: 4096);
        await client.SendGetAsync(1, $"/stream/{1L << 30}");

        // A slow reader: a burst, then a pause, so TLS writes complete now and then and block again.
        long received = 0;
        long sinceP = 0;
        while (received < 96L * 1024 * 1024 && held.Peak <= 3 * Bound)
        {
            RawHttp2Client.Frame frame = (await client.ReadFrameAsync().WaitAsync(TimeSpan.FromSeconds(60)))!;
            if (frame.Type == RawHttp2Client.Data)
            {
                received += frame.Payload.Length;
                sinceP += frame.Payload.Length;
                if (sinceP >= 256 * 1024)
                {
                    sinceP = 0;
                    await Task.Delay(5);
                }
            }
        }

        long batch = stage!.Statistics.LargestFlushBatch;
        Console.WriteLine($"coalescing {coalescing}: held peak {held.Peak} (pipe blocks + TLS writer), stage statistics peak {stage.Statistics.PeakBufferedBytes}, largest batch {batch}, bound {Bound}, received {received}");

        // The documented bound: the pipe's pause threshold plus one batch Kestrel wrote before its flush; allow one TLS
        // record in flight and two pool blocks of rounding on top.
        long allowed = Bound + batch + TlsRecordWriter.RecordSize + 2 * 4096;
        Assert.True(held.Peak <= allowed, $"the stage held {held.Peak} bytes; bound {Bound}, largest batch {batch}, allowed {allowed}");
    }

    /// <summary>Clients that vanish mid-response (socket reset while the stage holds bytes) are ordinary: no Error logs.</summary>
    [Fact]
    public async Task Clients_resetting_mid_response_log_no_errors()
    {
        var logs = new LogRecorder();
        Http2TlsOutputStageOptions? stage = null;
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureServices: s => s.AddLogging(b => b.AddProvider(logs)),
            configureTls: l => l.UseTlsRecordCoalescing().UseHttp2TlsOutputStage(o => stage = o));

        for (int i = 0; i < 10; i++)
        {
            RawHttp2Client client = await RawHttp2Client.ConnectAsync(host.Https, initialWindowSize: int.MaxValue, connectionWindowIncrement: int.MaxValue - 65535, receiveBufferSize: 4096);
            await client.SendGetAsync(1, $"/stream/{1L << 30}");
            long received = 0;
            while (received < 256 * 1024)
            {
                RawHttp2Client.Frame frame = (await client.ReadFrameAsync().WaitAsync(TimeSpan.FromSeconds(60)))!;
                if (frame.Type == RawHttp2Client.Data)
                {
                    received += frame.Payload.Length;
                }
            }

            // Let the stage fill behind the client, then reset the socket (linger 0: RST, unread data dropped).
            await Task.Delay(100);
            client.ResetSocket();
            await client.DisposeAsync();
        }

        await host.StopAsync();
        Assert.Equal(10, stage!.Statistics.ConnectionsStaged);
        logs.AssertNoErrors();
    }

    /// <summary>
    /// PipeWriter.CancelPendingFlush (public on HttpResponse.BodyWriter) releases a waiting flush and loses nothing. On an
    /// HTTP/1.1 connection Kestrel passes it to the connection's writer, the stage. While the client reads slowly the
    /// stage's drain is in the middle of a TLS write; the body must still arrive whole, once, on a connection that goes on.
    /// </summary>
    [Theory]
    [InlineData(true, false)]
    [InlineData(true, true)]
    [InlineData(false, true)]
    // Not staged and without record coalescing, Kestrel's own TLS writer gets the cancel part-way through a record and
    // repeats bytes or breaks the TLS stream: not a case FastFiles can change.
    public async Task CancelPendingFlush_from_the_app_loses_and_repeats_nothing(bool staged, bool coalescing)
    {
        const int Length = 64 * 1024 * 1024;
        int cancels = 0;
        await using TestHost host = await TestHost.StartAsync(
            app =>
            {
                StageTestApp.Configure(_sized.Files, _probe)(app);
                app.MapGet("/cancelflush/{length:int}", async (Microsoft.AspNetCore.Http.HttpContext context, int length) =>
                {
                    context.Response.ContentLength = length;
                    PipeWriter writer = context.Response.BodyWriter;
                    int written = 0;
                    while (written < length)
                    {
                        int offset = written % StageTestApp.Pattern.Length;
                        int count = Math.Min(Math.Min(StageTestApp.ChunkSize, length - written), StageTestApp.Pattern.Length - offset);
                        writer.Write(StageTestApp.Pattern.AsSpan(offset, count));
                        written += count;
                        ValueTask<FlushResult> flush = writer.FlushAsync();
                        if (!flush.IsCompleted && cancels < 200)
                        {
                            // Backpressure: the stage is full, so its drain is waiting on TLS. Release our own wait.
                            Interlocked.Increment(ref cancels);
                            writer.CancelPendingFlush();
                        }

                        if ((await flush).IsCompleted)
                        {
                            return;
                        }
                    }
                });
            },
            configureTls: l =>
            {
                if (coalescing)
                {
                    l.UseTlsRecordCoalescing();
                }

                // Not staged: stock Kestrel's own TLS writer, for comparison.
                l.UseHttp2TlsOutputStage(o => o.Mode = staged ? Http2TlsOutputStageMode.AllProtocols : Http2TlsOutputStageMode.Disabled);
            });

        (TcpClient tcpClient, SslStream tlsStream) = await TestCertificate.ConnectHttp11Async(host.Https.Port);
        using TcpClient tcp = tcpClient;
        await using SslStream tls = tlsStream;
        await tls.WriteAsync(Encoding.ASCII.GetBytes($"GET /cancelflush/{Length} HTTP/1.1\r\nHost: localhost\r\n\r\n"));

        // A slow reader: bursts and pauses, so the server's TLS writes wait on the socket.
        byte[] response = new byte[Length + 4096];
        int total = 0;
        int headerEnd = -1;
        int sincePause = 0;
        try
        {
            while (headerEnd < 0 || total < headerEnd + 4 + Length)
            {
                int n = await tls.ReadAsync(response.AsMemory(total, Math.Min(16384, response.Length - total))).AsTask().WaitAsync(TimeSpan.FromSeconds(60));
                if (n == 0)
                {
                    break;
                }

                total += n;
                if (headerEnd < 0)
                {
                    headerEnd = response.AsSpan(0, total).IndexOf("\r\n\r\n"u8);
                }

                sincePause += n;
                if (sincePause >= 256 * 1024)
                {
                    sincePause = 0;
                    await Task.Delay(2);
                }

                if (total == response.Length)
                {
                    break;
                }
            }
        }
        catch (IOException ex)
        {
            // Reset: checked below.
            Console.WriteLine($"staged {staged}, coalescing {coalescing}: read failed after {total} bytes: {ex.Message}");
        }

        Assert.True(headerEnd > 0, $"no response head in {total} bytes: {Encoding.ASCII.GetString(response, 0, Math.Min(total, 300))}");
        ReadOnlySpan<byte> body = response.AsSpan(headerEnd + 4, total - headerEnd - 4);
        Console.WriteLine($"staged {staged}, coalescing {coalescing}: {Volatile.Read(ref cancels)} cancels, body {body.Length} of {Length}");
        Assert.True(Volatile.Read(ref cancels) > 0, "the app's flush never waited");
        for (int offset = 0; offset < body.Length; offset += StageTestApp.Pattern.Length)
        {
            int count = Math.Min(StageTestApp.Pattern.Length, body.Length - offset);
            Assert.True(body.Slice(offset, count).SequenceEqual(StageTestApp.Pattern.AsSpan(0, count)), $"bytes differ in [{offset}, {offset + count}) of a body of {body.Length}");
        }

        Assert.Equal(Length, body.Length);

        // The connection goes on.
        await tls.WriteAsync(Encoding.ASCII.GetBytes("GET /stream/100 HTTP/1.1\r\nHost: localhost\r\n\r\n"));
        int next = await tls.ReadAsync(response.AsMemory(0, 4096)).AsTask().WaitAsync(TimeSpan.FromSeconds(60));
        Assert.StartsWith("HTTP/1.1 200", Encoding.ASCII.GetString(response, 0, Math.Max(next, 0)));
    }

    internal sealed class HeldBytes
    {
        private long _now;
        private long _peak;

        public long Now => Volatile.Read(ref _now);

        public long Peak => Volatile.Read(ref _peak);

        public void Add(long bytes)
        {
            long now = Interlocked.Add(ref _now, bytes);
            long peak = Volatile.Read(ref _peak);
            while (now > peak)
            {
                long seen = Interlocked.CompareExchange(ref _peak, now, peak);
                if (seen == peak)
                {
                    return;
                }

                peak = seen;
            }
        }
    }

    private sealed class Duplex(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }

    private sealed class PoolFeature(MemoryPool<byte> pool) : IMemoryPoolFeature
    {
        public MemoryPool<byte> MemoryPool { get; } = pool;
    }

    /// <summary>Counts the bytes of every block rented and not yet returned; any size (large ones are plain arrays).</summary>
    internal sealed class CountingPool(MemoryPool<byte> inner, HeldBytes held) : MemoryPool<byte>
    {
        public override int MaxBufferSize => int.MaxValue;

        public override IMemoryOwner<byte> Rent(int minBufferSize = -1)
        {
            IMemoryOwner<byte> owner = minBufferSize <= inner.MaxBufferSize ? inner.Rent(minBufferSize) : new ArrayOwner(minBufferSize);
            held.Add(owner.Memory.Length);
            return new Owner(owner, held);
        }

        protected override void Dispose(bool disposing)
        {
        }

        private sealed class ArrayOwner(int size) : IMemoryOwner<byte>
        {
            public Memory<byte> Memory { get; } = new byte[size];

            public void Dispose()
            {
            }
        }

        private sealed class Owner(IMemoryOwner<byte> inner, HeldBytes held) : IMemoryOwner<byte>
        {
            private int _disposed;

            public Memory<byte> Memory => inner.Memory;

            public void Dispose()
            {
                if (Interlocked.Exchange(ref _disposed, 1) == 0)
                {
                    held.Add(-inner.Memory.Length);
                    inner.Dispose();
                }
            }
        }
    }

    /// <summary>The TLS writer as the stage sees it: counts bytes handed to it until a flush that covers them completes.</summary>
    internal sealed class HeldTlsWriter(PipeWriter inner, HeldBytes held) : PipeWriter
    {
        private long _pending;

        public override bool CanGetUnflushedBytes => inner.CanGetUnflushedBytes;

        public override long UnflushedBytes => inner.UnflushedBytes;

        public override void Advance(int bytes)
        {
            inner.Advance(bytes);
            _pending += bytes;
            held.Add(bytes);
        }

        public override Memory<byte> GetMemory(int sizeHint = 0) => inner.GetMemory(sizeHint);

        public override Span<byte> GetSpan(int sizeHint = 0) => inner.GetSpan(sizeHint);

        public override async ValueTask<FlushResult> FlushAsync(CancellationToken cancellationToken = default)
        {
            long covered = _pending;
            FlushResult result = await inner.FlushAsync(cancellationToken);
            if (!result.IsCanceled)
            {
                _pending -= covered;
                held.Add(-covered);
            }

            return result;
        }

        public override void CancelPendingFlush() => inner.CancelPendingFlush();

        public override void Complete(Exception? exception = null)
        {
            Release();
            inner.Complete(exception);
        }

        public override async ValueTask CompleteAsync(Exception? exception = null)
        {
            await inner.CompleteAsync(exception);
            Release();
        }

        private void Release()
        {
            held.Add(-_pending);
            _pending = 0;
        }
    }
}
