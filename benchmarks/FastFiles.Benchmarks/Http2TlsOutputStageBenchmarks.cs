using System.Buffers;
using System.IO.Pipelines;
using System.Threading.Tasks.Sources;
using BenchmarkDotNet.Attributes;
using FastFiles.Benchmarks.Infrastructure;
using FastFiles.Connections;
using FastFiles.Diagnostics;
using Microsoft.Extensions.Logging.Abstractions;

namespace FastFiles.Benchmarks;

/// <summary>
/// The HTTP/2-over-TLS output stage's forwarding hop, per response: write <see cref="Size"/> bytes in 4 KiB chunks
/// (Kestrel's frame writes and block size), flush every 16 KiB and at the end, then wait until the TLS side has
/// received every byte. The baseline is Kestrel's stock path, writing straight into the TLS pipe writer; FastFiles
/// writes the same bytes into <see cref="OutputStageConnection.Output"/>, whose drain loop copies them on the thread
/// pool into the TLS pipe writer in up-to-16 KiB spans and flushes.
/// </summary>
/// <remarks>
/// The "TLS side" is a <see cref="DrainedPipe"/>-shaped pipe (4 KiB blocks, 64 KiB pause threshold, inline
/// schedulers) whose reader consumes and counts everything: there is no <c>SslStream</c> and no socket, so the
/// suite measures only what the stage adds (the extra copy, the pipe bookkeeping, the thread-pool hop), never the
/// encryption overlap it exists for. eng/bench-micro.sh pins the process to one CPU, so the drain loop and the
/// writing code also take turns on that CPU instead of overlapping.
/// </remarks>
[MemoryDiagnoser]
public class Http2TlsOutputStageBenchmarks
{
    private const int ChunkSize = 4 * 1024;
    private const int FlushEvery = 16 * 1024;

    // Kestrel's default MaxResponseBufferSize, which is what the stage resolves its bound to by default.
    private const long Bound = 64 * 1024;

    private readonly byte[] _chunk = new byte[ChunkSize];
    private TlsSide _tls = null!;
    private OutputStageConnection _stage = null!;
    private Task _stageDrain = null!;
    private long _sent;

    [Params(1024, 16 * 1024, 64 * 1024, 1024 * 1024)]
    public int Size { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        Random.Shared.NextBytes(_chunk);
        _tls = new TlsSide();
        _sent = 0;
        _stage = new OutputStageConnection(_tls, new BlockMemoryPool(), Bound, new Http2TlsOutputStageStatistics(), new FastFiles.Diagnostics.FastFilesMetrics(null), NullLogger.Instance, "bench");
        _stageDrain = _stage.StartDraining();
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        // Ends the drain loop, which completes the TLS writer, which ends the TLS side's reader.
        _stage.CompleteWriter();
        _stageDrain.GetAwaiter().GetResult();
        _tls.DisposeAsync().AsTask().GetAwaiter().GetResult();
    }

    [Benchmark(Baseline = true, Description = "Stock (frames -> TLS PipeWriter)")]
    public Task Stock() => SendAsync(_tls.Output);

    [Benchmark(Description = "FastFiles stage (frames -> stage -> TLS PipeWriter)")]
    public Task Staged() => SendAsync(_stage.Output);

    private async Task SendAsync(PipeWriter writer)
    {
        int remaining = Size;
        int unflushed = 0;
        while (remaining > 0)
        {
            int count = Math.Min(ChunkSize, remaining);
            writer.Write(_chunk.AsSpan(0, count));
            remaining -= count;
            unflushed += count;
            if (unflushed >= FlushEvery || remaining == 0)
            {
                FlushResult result = await writer.FlushAsync();
                if (result.IsCompleted || result.IsCanceled)
                {
                    throw new InvalidOperationException("The output ended early.");
                }

                unflushed = 0;
            }
        }

        _sent += Size;
        await _tls.WaitForReceivedAsync(_sent);
    }

    /// <summary>
    /// The stand-in for <c>SslStream</c> over the socket: output is drained (inline, on the flushing thread) and
    /// counted; input is an empty pipe that nothing writes to.
    /// </summary>
    private sealed class TlsSide : IDuplexPipe, IValueTaskSource, IAsyncDisposable
    {
        private const int Idle = 0;
        private const int Armed = 1;

        private readonly Pipe _output;
        private readonly Pipe _input = new();
        private readonly Task _drain;
        private ManualResetValueTaskSourceCore<bool> _waiter;
        private long _received;
        private long _target;
        private int _state;

        public TlsSide()
        {
            _output = new Pipe(DrainedPipe.KestrelShapedOptions());
            _drain = DrainAsync(_output.Reader);
        }

        public PipeReader Input => _input.Reader;

        public PipeWriter Output => _output.Writer;

        /// <summary>Completes once <paramref name="total"/> bytes have been received since construction.</summary>
        public ValueTask WaitForReceivedAsync(long total)
        {
            if (Volatile.Read(ref _received) >= total)
            {
                return default;
            }

            // One waiter at a time (the benchmark awaits each call before the next), reused so waiting allocates nothing.
            _waiter.Reset();
            _target = total;
            Interlocked.Exchange(ref _state, Armed);
            if (Volatile.Read(ref _received) >= total && Interlocked.CompareExchange(ref _state, Idle, Armed) == Armed)
            {
                return default;
            }

            return new ValueTask(this, _waiter.Version);
        }

        private async Task DrainAsync(PipeReader reader)
        {
            while (true)
            {
                ReadResult result = await reader.ReadAsync();
                long length = result.Buffer.Length;
                reader.AdvanceTo(result.Buffer.End);
                long received = Interlocked.Add(ref _received, length);
                if (Volatile.Read(ref _state) == Armed && received >= _target
                    && Interlocked.CompareExchange(ref _state, Idle, Armed) == Armed)
                {
                    _waiter.SetResult(true);
                }

                if (result.IsCompleted)
                {
                    break;
                }
            }

            await reader.CompleteAsync();
        }

        public async ValueTask DisposeAsync()
        {
            await _output.Writer.CompleteAsync();
            await _drain;
            await _input.Writer.CompleteAsync();
            await _input.Reader.CompleteAsync();
        }

        void IValueTaskSource.GetResult(short token) => _waiter.GetResult(token);

        ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _waiter.GetStatus(token);

        void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
            => _waiter.OnCompleted(continuation, state, token, flags);
    }
}
