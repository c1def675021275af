using System.Buffers;
using System.IO.Pipelines;
using FastFiles.Connections;

namespace FastFiles.Tests.Connections;

/// <summary>
/// The record writer against a stream that records each write (what SslStream would turn into one TLS record each),
/// fed the way Kestrel's frame writer feeds its transport: small headers, then bodies in 4 KiB pool-block pieces.
/// </summary>
public sealed class TlsRecordWriterTests
{
    private const int Block = 4096;
    private const int Record = TlsRecordWriter.RecordSize;

    private static byte[] Random(int length, int seed)
    {
        byte[] bytes = new byte[length];
        new Random(seed).NextBytes(bytes);
        return bytes;
    }

    private static void WriteFrame(PipeWriter writer, byte[] header, byte[] body)
    {
        writer.Write(header);
        for (int offset = 0; offset < body.Length; offset += Block)
        {
            writer.Write(body.AsSpan(offset, Math.Min(Block, body.Length - offset)));
        }
    }

    [Fact]
    public async Task Pool_block_writes_reach_the_stream_as_full_records()
    {
        var stream = new RecordingStream();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer);
        byte[] header = Random(9, 1);
        byte[] body = Random(64 * 1024, 2);

        WriteFrame(writer, header, body);
        Assert.Equal(header.Length + body.Length, writer.UnflushedBytes);
        FlushResult result = await writer.FlushAsync();

        Assert.False(result.IsCanceled);
        Assert.Equal([.. header, .. body], stream.Data.ToArray());
        Assert.Equal([Record, Record, Record, Record, 9], stream.Writes);
        Assert.Equal(1, stream.Flushes);
        Assert.Equal(0, writer.UnflushedBytes);
    }

    [Fact]
    public async Task Each_flush_sends_what_was_written_since_the_last_one_in_order()
    {
        var stream = new RecordingStream();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer);
        var expected = new List<byte>();
        for (int i = 0; i < 20; i++)
        {
            // Sizes around block and record boundaries, through GetMemory/Advance as well as Write.
            byte[] chunk = Random((i * 2500 % 40_000) + 1, i);
            Memory<byte> memory = writer.GetMemory(Math.Min(chunk.Length, 100));
            int first = Math.Min(memory.Length, chunk.Length);
            chunk.AsSpan(0, first).CopyTo(memory.Span);
            writer.Advance(first);
            writer.Write(chunk.AsSpan(first));
            expected.AddRange(chunk);
            if (i % 3 == 0)
            {
                Assert.Equal(expected.Count - stream.Data.Length, writer.UnflushedBytes);
                await writer.FlushAsync();
                Assert.Equal(expected.Count, stream.Data.Length);
            }
        }

        await writer.FlushAsync();
        Assert.Equal(expected.ToArray(), stream.Data.ToArray());
        Assert.All(stream.Writes, w => Assert.InRange(w, 1, Record));
    }

    [Fact]
    public async Task A_request_for_more_than_a_record_gets_one_contiguous_buffer()
    {
        var stream = new RecordingStream();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer);
        writer.Write(Random(10, 1));

        Memory<byte> memory = writer.GetMemory(40_000);
        Assert.True(memory.Length >= 40_000);
        Random(40_000, 2).CopyTo(memory);
        writer.Advance(40_000);
        await writer.FlushAsync();

        Assert.Equal([10, 40_000], stream.Writes);
        Assert.Throws<ArgumentOutOfRangeException>(() => writer.Advance(Record + 1));
    }

    [Fact]
    public async Task Cancelling_with_no_flush_in_progress_cancels_the_next_flush_and_keeps_the_bytes()
    {
        var stream = new RecordingStream();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer);
        byte[] bytes = Random(100, 3);
        writer.Write(bytes);

        writer.CancelPendingFlush();
        Assert.True((await writer.FlushAsync()).IsCanceled);
        Assert.Empty(stream.Writes);

        Assert.False((await writer.FlushAsync()).IsCanceled);
        Assert.Equal(bytes, stream.Data.ToArray());
    }

    [Fact]
    public async Task Cancelling_during_a_write_ends_the_flush_after_that_record_and_keeps_the_rest()
    {
        // Cutting the record under way would break the TLS stream (StreamPipeWriter then rewrites it, repeating bytes):
        // the flush ends as canceled once that record is written whole, the records after it stay queued, and the
        // connection goes on.
        var stream = new GatedStream();
        var aborts = new List<Exception>();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer, aborts.Add);
        byte[] bytes = Random(3 * Record, 4);
        writer.Write(bytes);

        ValueTask<FlushResult> flush = writer.FlushAsync();
        await stream.WriteStarted.Task.WaitAsync(TimeSpan.FromSeconds(30));
        writer.CancelPendingFlush();
        Assert.False(flush.IsCompleted);
        stream.Open();

        FlushResult result = await flush.AsTask().WaitAsync(TimeSpan.FromSeconds(30));
        Assert.True(result.IsCanceled);
        Assert.False(writer.Broken);
        Assert.Empty(aborts);
        Assert.Equal(Record, stream.Data.Length);
        Assert.Equal(2 * Record, writer.UnflushedBytes);

        result = await writer.FlushAsync();
        Assert.False(result.IsCanceled || result.IsCompleted);
        Assert.Equal(bytes, stream.Data.ToArray());
        Assert.Equal(0, writer.UnflushedBytes);
    }

    [Fact]
    public async Task The_callers_token_ends_a_blocked_flush_with_an_exception_and_an_abort()
    {
        // As StreamPipeWriter: the caller's token throws, which is how Kestrel learns to abort the connection; the
        // writer has aborted it already and drops what follows.
        var stream = new BlockingStream();
        var aborts = new List<Exception>();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer, aborts.Add);
        writer.Write(Random(100, 5));
        using var cts = new CancellationTokenSource();

        ValueTask<FlushResult> flush = writer.FlushAsync(cts.Token);
        await stream.WriteStarted.Task.WaitAsync(TimeSpan.FromSeconds(30));
        await cts.CancelAsync();

        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => flush.AsTask().WaitAsync(TimeSpan.FromSeconds(30)));
        Assert.True(writer.Broken);
        Assert.Single(aborts);
        Assert.True((await writer.FlushAsync()).IsCompleted);
    }

    [Fact]
    public async Task A_token_cancelled_before_any_write_throws_and_keeps_the_bytes()
    {
        var stream = new RecordingStream();
        var aborts = new List<Exception>();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer, aborts.Add);
        byte[] bytes = Random(40_000, 10);
        writer.Write(bytes);

        await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await writer.FlushAsync(new CancellationToken(canceled: true)));
        Assert.Empty(stream.Writes);
        Assert.False(writer.Broken);
        Assert.Empty(aborts);
        Assert.Equal(bytes.Length, writer.UnflushedBytes);

        Assert.False((await writer.FlushAsync()).IsCanceled);
        Assert.Equal(bytes, stream.Data.ToArray());
    }

    [Fact]
    public async Task A_cancel_during_the_streams_flush_leaves_the_connection_usable()
    {
        // Every record was written whole before the stream's flush: the caller's token throws (Kestrel aborts on it),
        // CancelPendingFlush reports IsCanceled, and neither breaks the writer.
        var stream = new FlushBlockingStream();
        var aborts = new List<Exception>();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer, aborts.Add);
        writer.Write(Random(40_000, 12));
        using var cts = new CancellationTokenSource();
        ValueTask<FlushResult> flush = writer.FlushAsync(cts.Token);
        await stream.FlushStarted.Task.WaitAsync(TimeSpan.FromSeconds(30));
        await cts.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => flush.AsTask().WaitAsync(TimeSpan.FromSeconds(30)));

        stream.ResetFlush();
        writer.Write(Random(100, 13));
        flush = writer.FlushAsync();
        await stream.FlushStarted.Task.WaitAsync(TimeSpan.FromSeconds(30));
        writer.CancelPendingFlush();
        Assert.True((await flush.AsTask().WaitAsync(TimeSpan.FromSeconds(30))).IsCanceled);

        Assert.False(writer.Broken);
        Assert.Empty(aborts);
        Assert.Equal(40_100, stream.Data.Length);
    }

    [Fact]
    public async Task A_failed_write_returns_each_block_to_the_pool_once()
    {
        // The pool is shared by every connection: a block returned twice would be rented by two at once.
        while (TlsRecordWriter.BlockPool.Retained > 0)
        {
            TlsRecordWriter.BlockPool.Rent();
        }

        var writer = new TlsRecordWriter(new FailingSecondWriteStream(), new Pipe().Writer);
        writer.Write(Random(3 * Record, 14));
        await Assert.ThrowsAsync<IOException>(async () => await writer.FlushAsync());
        // The failed write may have cut a record short: nothing more may go out after it.
        Assert.True(writer.Broken);
        writer.Complete();

        int retained = TlsRecordWriter.BlockPool.Retained;
        Assert.Equal(3, retained);
        var rented = Enumerable.Range(0, retained).Select(_ => TlsRecordWriter.BlockPool.Rent()).ToList();
        Assert.Equal(rented.Count, rented.Distinct(ReferenceEqualityComparer.Instance).Count());
    }

    [Fact]
    public async Task Completing_during_a_flush_returns_each_block_to_the_pool_once()
    {
        // The connection middleware completes the writer in its finally; were a flush still running then, the blocks
        // listed for it must go back to the shared pool once, by whichever of the two ends last.
        while (TlsRecordWriter.BlockPool.Retained > 0)
        {
            TlsRecordWriter.BlockPool.Rent();
        }

        var stream = new GatedStream();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer);
        writer.Write(Random(3 * Record, 15));
        ValueTask<FlushResult> flush = writer.FlushAsync();
        await stream.WriteStarted.Task.WaitAsync(TimeSpan.FromSeconds(30));
        writer.Complete();
        stream.Open();
        FlushResult result = await flush.AsTask().WaitAsync(TimeSpan.FromSeconds(30));

        // The record under way went out whole; nothing after the completion.
        Assert.True(result.IsCompleted);
        Assert.Equal(Record, stream.Data.Length);
        int retained = TlsRecordWriter.BlockPool.Retained;
        Assert.Equal(3, retained);
        var rented = Enumerable.Range(0, retained).Select(_ => TlsRecordWriter.BlockPool.Rent()).ToList();
        Assert.Equal(rented.Count, rented.Distinct(ReferenceEqualityComparer.Instance).Count());
    }

    [Fact]
    public async Task Completing_without_an_error_sends_what_is_buffered()
    {
        var stream = new RecordingStream();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer);
        byte[] bytes = Random(20_000, 11);
        writer.Write(bytes);
        writer.CancelPendingFlush();
        Assert.True((await writer.FlushAsync()).IsCanceled);

        await writer.CompleteAsync();
        Assert.Equal(bytes, stream.Data.ToArray());
    }

    [Fact]
    public async Task Completing_completes_the_replaced_writer_with_the_same_error()
    {
        var replaced = new Pipe();
        var writer = new TlsRecordWriter(new RecordingStream(), replaced.Writer);
        writer.Write(Random(50, 6));

        writer.Complete(new InvalidOperationException("boom"));
        writer.Complete();

        InvalidOperationException error = await Assert.ThrowsAsync<InvalidOperationException>(async () => await replaced.Reader.ReadAsync());
        Assert.Equal("boom", error.Message);
        Assert.Throws<ObjectDisposedException>(() => writer.GetSpan());
    }

    [Fact]
    public async Task Steady_state_flushes_allocate_nothing()
    {
        var stream = new CountingStream();
        var writer = new TlsRecordWriter(stream, new Pipe().Writer);
        byte[] header = Random(9, 7);
        byte[] body = Random(64 * 1024, 8);
        for (int i = 0; i < 50; i++)
        {
            WriteFrame(writer, header, body);
            await writer.FlushAsync();
        }

        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 200; i++)
        {
            WriteFrame(writer, header, body);
            await writer.FlushAsync();
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
        Assert.Equal(250L * (header.Length + body.Length), stream.Total);
    }

    private class RecordingStream : Stream
    {
        public MemoryStream Data { get; } = new();

        public List<int> Writes { get; } = [];

        public int Flushes { get; private set; }

        public override bool CanRead => false;

        public override bool CanSeek => false;

        public override bool CanWrite => true;

        public override long Length => throw new NotSupportedException();

        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

        public override void Write(byte[] buffer, int offset, int count) => Write(buffer.AsSpan(offset, count));

        public override void Write(ReadOnlySpan<byte> buffer)
        {
            Writes.Add(buffer.Length);
            Data.Write(buffer);
        }

        public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            Write(buffer.Span);
            return ValueTask.CompletedTask;
        }

        public override Task FlushAsync(CancellationToken cancellationToken)
        {
            Flushes++;
            return Task.CompletedTask;
        }

        public override void Flush() => Flushes++;

        public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();
    }

    // Counts bytes without keeping them, so the allocation test measures only the writer.
    private sealed class CountingStream : RecordingStream
    {
        public long Total { get; private set; }

        public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            Total += buffer.Length;
            return ValueTask.CompletedTask;
        }
    }

    // Writes go through; the stream's flush waits until cancelled.
    private sealed class FlushBlockingStream : RecordingStream
    {
        public TaskCompletionSource FlushStarted { get; private set; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void ResetFlush() => FlushStarted = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public override async Task FlushAsync(CancellationToken cancellationToken)
        {
            FlushStarted.TrySetResult();
            await Task.Delay(Timeout.Infinite, cancellationToken);
        }
    }

    // A connection reset on the second write.
    private sealed class FailingSecondWriteStream : RecordingStream
    {
        private int _writes;

        public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
            => ++_writes >= 2 ? ValueTask.FromException(new IOException("reset")) : base.WriteAsync(buffer, cancellationToken);
    }

    // A socket that is full: writes wait until cancelled.
    // Writes wait until Open is called, then go through (all later ones at once).
    private sealed class GatedStream : RecordingStream
    {
        private readonly TaskCompletionSource _gate = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public TaskCompletionSource WriteStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void Open() => _gate.TrySetResult();

        public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            WriteStarted.TrySetResult();
            await _gate.Task.WaitAsync(cancellationToken);
            await base.WriteAsync(buffer, cancellationToken);
        }
    }

    private sealed class BlockingStream : RecordingStream
    {
        public TaskCompletionSource WriteStarted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public int Starts { get; private set; }

        public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            Starts++;
            WriteStarted.TrySetResult();
            await Task.Delay(Timeout.Infinite, cancellationToken);
        }
    }
}
