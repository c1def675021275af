using System.Buffers;
using System.IO.Pipelines;
using FastFiles.Connections;
using FastFiles.Diagnostics;
using Microsoft.Extensions.Logging.Abstractions;

namespace FastFiles.Tests.Connections;

/// <summary>The stage against an in-memory "TLS" pipe, so each propagation rule can be driven exactly.</summary>
public sealed class OutputStageConnectionTests
{
    private const long Bound = 4096;
    private readonly Pipe _tlsOutput;
    private readonly Pipe _tlsInput = new();
    private readonly Http2TlsOutputStageStatistics _statistics = new();
    private readonly OutputStageConnection _stage;
    private readonly Task _drain;

    public OutputStageConnectionTests()
    {
        // Whatever the stage writes as "TLS" lands here; a small threshold stands for a socket that is full.
        _tlsOutput = new Pipe(new PipeOptions(pauseWriterThreshold: 1024, resumeWriterThreshold: 512, useSynchronizationContext: false));
        _stage = new OutputStageConnection(new DuplexPipe(_tlsInput.Reader, _tlsOutput.Writer), MemoryPool<byte>.Shared, Bound, _statistics, new FastFiles.Diagnostics.FastFilesMetrics(null), NullLogger.Instance, "test");
        _drain = _stage.StartDraining();
    }

    private sealed class DuplexPipe(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }

    private async Task<byte[]> ReadAllTlsAsync()
    {
        var all = new List<byte>();
        while (true)
        {
            ReadResult result = await _tlsOutput.Reader.ReadAsync();
            all.AddRange(result.Buffer.ToArray());
            _tlsOutput.Reader.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                return [.. all];
            }
        }
    }

    [Fact]
    public async Task Bytes_arrive_in_order_and_completion_reaches_the_tls_writer()
    {
        Task<byte[]> reader = ReadAllTlsAsync();
        var expected = new byte[200_000];
        new Random(7).NextBytes(expected);
        int offset = 0;
        var random = new Random(3);
        while (offset < expected.Length)
        {
            int count = Math.Min(random.Next(1, 40_000), expected.Length - offset);
            _stage.Output.Write(expected.AsSpan(offset, count));
            offset += count;
            if (random.Next(3) > 0)
            {
                FlushResult flush = await _stage.Output.FlushAsync();
                Assert.False(flush.IsCompleted);
            }
        }

        await _stage.Output.CompleteAsync();
        await _drain.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(expected, await reader.WaitAsync(TimeSpan.FromSeconds(30)));
        Assert.Equal(expected.Length, _statistics.BytesForwarded);
    }

    [Fact]
    public async Task Flush_waits_once_the_bound_is_buffered_and_resumes_when_tls_drains()
    {
        byte[] chunk = new byte[512];
        ValueTask<FlushResult> pending = default;
        long written = 0;
        for (int i = 0; i < 1000; i++)
        {
            _stage.Output.Write(chunk);
            written += chunk.Length;
            pending = _stage.Output.FlushAsync();
            if (!pending.IsCompleted)
            {
                break;
            }
        }

        Assert.False(pending.IsCompleted);
        // "TLS" holds ~1 KiB before it pushes back, the stage at most its bound plus the one batch that crossed it.
        Assert.True(written <= Bound + 1024 + 2 * chunk.Length + 16 * 1024, $"written {written}");
        Assert.True(_statistics.PeakBufferedBytes < Bound + _statistics.LargestFlushBatch);

        Task<byte[]> reader = ReadAllTlsAsync();
        FlushResult resumed = await pending.AsTask().WaitAsync(TimeSpan.FromSeconds(30));
        Assert.False(resumed.IsCompleted);
        await _stage.Output.CompleteAsync();
        Assert.Equal(written, (await reader.WaitAsync(TimeSpan.FromSeconds(30))).Length);
    }

    [Fact]
    public async Task Tls_side_gone_is_reported_to_kestrel_as_completion()
    {
        await _tlsOutput.Reader.CompleteAsync();
        _stage.Output.Write(new byte[100]);
        await _stage.Output.FlushAsync();
        await _drain.WaitAsync(TimeSpan.FromSeconds(30));

        _stage.Output.Write(new byte[100]);
        FlushResult result = await _stage.Output.FlushAsync();
        Assert.True(result.IsCompleted);
    }

    [Fact]
    public async Task Tls_failure_is_rethrown_to_kestrel()
    {
        var failure = new IOException("socket reset");
        await _tlsOutput.Reader.CompleteAsync(failure);
        _stage.Output.Write(new byte[100]);
        await _stage.Output.FlushAsync();
        await _drain.WaitAsync(TimeSpan.FromSeconds(30));

        _stage.Output.Write(new byte[100]);
        IOException thrown = await Assert.ThrowsAsync<IOException>(async () => await _stage.Output.FlushAsync());
        Assert.Same(failure, thrown);
    }

    [Fact]
    public async Task CancelPendingFlush_releases_kestrels_flush_and_loses_nothing()
    {
        byte[] chunk = new byte[512];
        ValueTask<FlushResult> pending = default;
        for (int i = 0; i < 1000 && (i == 0 || pending.IsCompleted); i++)
        {
            _stage.Output.Write(chunk);
            pending = _stage.Output.FlushAsync();
        }

        Assert.False(pending.IsCompleted);
        _stage.Output.CancelPendingFlush();
        FlushResult result = await pending.AsTask().WaitAsync(TimeSpan.FromSeconds(30));
        Assert.True(result.IsCanceled);

        // Nothing was lost: once the "socket" drains, every byte still goes out.
        Task<byte[]> reader = ReadAllTlsAsync();
        await _stage.Output.CompleteAsync();
        await _drain.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Equal(_statistics.BytesForwarded, (await reader.WaitAsync(TimeSpan.FromSeconds(30))).Length);
    }

    [Fact]
    public async Task Kestrel_abort_completes_the_tls_writer_with_the_error()
    {
        _stage.Output.Write(new byte[100]);
        await _stage.Output.FlushAsync();
        var abort = new InvalidOperationException("aborted");
        await _stage.Output.CompleteAsync(abort);
        await _drain.WaitAsync(TimeSpan.FromSeconds(30));

        InvalidOperationException thrown = await Assert.ThrowsAsync<InvalidOperationException>(async () =>
        {
            while (true)
            {
                ReadResult result = await _tlsOutput.Reader.ReadAsync();
                _tlsOutput.Reader.AdvanceTo(result.Buffer.End);
                if (result.IsCompleted)
                {
                    return;
                }
            }
        });
        Assert.Same(abort, thrown);
    }

    [Fact]
    public async Task Input_passes_through_and_keeps_being_read_until_the_output_has_drained()
    {
        await _tlsInput.Writer.WriteAsync(new byte[] { 1, 2, 3 });
        ReadResult read = await _stage.Input.ReadAsync();
        Assert.Equal(new byte[] { 1, 2, 3 }, read.Buffer.ToArray());
        _stage.Input.AdvanceTo(read.Buffer.End);

        // Kestrel is done: it completes both sides while the "socket" still holds the response tail.
        _stage.Output.Write(new byte[4000]);
        await _stage.Output.FlushAsync();
        await _stage.Input.CompleteAsync();
        await _stage.Output.CompleteAsync();
        var drained = new TaskCompletionSource();
        Task linger = _stage.LingerAsync(drained.Task);

        // The client's frames about the tail (WINDOW_UPDATE...) are still consumed, so the close is not a reset.
        FlushResult clientWrite = await _tlsInput.Writer.WriteAsync(new byte[100_000]).AsTask().WaitAsync(TimeSpan.FromSeconds(30));
        Assert.False(clientWrite.IsCompleted);
        Assert.False(linger.IsCompleted);

        drained.SetResult();
        await linger.WaitAsync(TimeSpan.FromSeconds(30));
        FlushResult afterClose = await _tlsInput.Writer.WriteAsync(new byte[1]);
        Assert.True(afterClose.IsCompleted);
    }
}
