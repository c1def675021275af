using System.Buffers;
using System.IO.Pipelines;
using FastFiles.Connections;

namespace FastFiles.Tests.Connections;

/// <summary>
/// The record-size writer over the same kind of writer Kestrel puts in front of <c>SslStream</c> (a
/// <c>StreamPipeWriter</c> on a pool of 4 KiB blocks), fed the way Kestrel's frame writer feeds it.
/// </summary>
public sealed class RecordSizedWriterTests
{
    private const int Block = 4096;

    private static byte[] Random(int length, int seed)
    {
        byte[] bytes = new byte[length];
        new Random(seed).NextBytes(bytes);
        return bytes;
    }

    private static (RecordingStream Stream, PipeWriter Tls) CreateTlsWriter()
    {
        var stream = new RecordingStream();
        PipeWriter tls = PipeWriter.Create(stream, new StreamPipeWriterOptions(pool: new BlockPool(), minimumBufferSize: Block, leaveOpen: true));
        return (stream, tls);
    }

    // A 9-byte frame header, then the body block by block, as Http2FrameWriter copies a stream's pipe.
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
        (RecordingStream stream, PipeWriter tls) = CreateTlsWriter();
        var writer = new TlsRecordCoalescingMiddleware.RecordSizedWriter(tls);
        byte[] header = Random(9, 1);
        byte[] body = Random(64 * 1024, 2);

        WriteFrame(writer, header, body);
        await writer.FlushAsync();

        Assert.Equal([.. header, .. body], stream.Data.ToArray());
        Assert.Equal([16384, 16384, 16384, 16384, 9], stream.Writes);
    }

    [Fact]
    public async Task Without_it_the_same_writes_are_pool_blocks()
    {
        // The control: what SslStream would see from Kestrel's writer alone.
        (RecordingStream stream, PipeWriter tls) = CreateTlsWriter();
        WriteFrame(tls, Random(9, 1), Random(64 * 1024, 2));
        await tls.FlushAsync();

        Assert.Equal(17, stream.Writes.Count);
        Assert.All(stream.Writes, w => Assert.True(w <= Block, $"write of {w}"));
    }

    [Fact]
    public async Task Each_flush_sends_what_was_written_since_the_last_one_in_order()
    {
        (RecordingStream stream, PipeWriter tls) = CreateTlsWriter();
        var writer = new TlsRecordCoalescingMiddleware.RecordSizedWriter(tls);
        var expected = new List<byte>();
        for (int i = 0; i < 20; i++)
        {
            // Sizes around the block and record boundaries, including writes larger than a record.
            byte[] chunk = Random(i * 2500 % 40_000 + 1, i);
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
    }

    [Fact]
    public async Task Completion_and_cancellation_reach_the_tls_writer()
    {
        var pipe = new Pipe(new PipeOptions(pauseWriterThreshold: 10, resumeWriterThreshold: 5, useSynchronizationContext: false));
        var writer = new TlsRecordCoalescingMiddleware.RecordSizedWriter(pipe.Writer);

        writer.Write(Random(100, 3));
        ValueTask<FlushResult> blocked = writer.FlushAsync();
        Assert.False(blocked.IsCompleted);
        writer.CancelPendingFlush();
        Assert.True((await blocked).IsCanceled);

        ReadResult read = await pipe.Reader.ReadAsync();
        Assert.Equal(100, read.Buffer.Length);
        pipe.Reader.AdvanceTo(read.Buffer.End);

        await writer.CompleteAsync(new InvalidOperationException("boom"));
        InvalidOperationException error = await Assert.ThrowsAsync<InvalidOperationException>(async () => await pipe.Reader.ReadAsync());
        Assert.Equal("boom", error.Message);
    }

    private sealed class RecordingStream : Stream
    {
        public MemoryStream Data { get; } = new();

        public List<int> Writes { get; } = [];

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

        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken)
        {
            Write(buffer.AsSpan(offset, count));
            return Task.CompletedTask;
        }

        public override void Flush()
        {
        }

        public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();
    }

    // Like Kestrel's pinned block pool: 4 KiB blocks only, so larger requests go to ArrayPool.
    private sealed class BlockPool : MemoryPool<byte>
    {
        public override int MaxBufferSize => Block;

        public override IMemoryOwner<byte> Rent(int minBufferSize = -1) => new Owner();

        protected override void Dispose(bool disposing)
        {
        }

        private sealed class Owner : IMemoryOwner<byte>
        {
            public Memory<byte> Memory { get; } = new byte[Block];

            public void Dispose()
            {
            }
        }
    }
}
