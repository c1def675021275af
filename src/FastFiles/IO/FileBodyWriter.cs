using System.Buffers;
using System.IO.Pipelines;
using FastFiles.Files;
using Microsoft.AspNetCore.Connections;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.IO;

/// <summary>
/// Copies a byte range of an open file straight into a response <see cref="PipeWriter"/>: the file is read into
/// the writer's own memory, so every byte is copied once (kernel to pipe buffer) instead of twice.
/// </summary>
internal static class FileBodyWriter
{
    // Kestrel pauses its output at KestrelServerLimits.MaxResponseBufferSize (64 KiB by default); flushing at
    // that granularity lets the transport start sending while we read on, without a flush per read.
    internal const int FlushThreshold = 64 * 1024;

    // Bodies read with hints over Kestrel's block at once (see WriteAsync): 12 per core leaves ArrayPool.Shared's 32
    // arrays per size and core for one or two each.
    private static readonly int MaxLargeReaders = 12 * Environment.ProcessorCount;
    private static int s_largeReaders;

    /// <summary>How many bodies are being read with hints over Kestrel's block right now.</summary>
    internal static int LargeReaders => Volatile.Read(ref s_largeReaders);

    /// <summary>
    /// Writes <paramref name="count"/> bytes of <paramref name="file"/> starting at <paramref name="offset"/>.
    /// Never throws for a client disconnect or a truncated file: the status says what happened and the caller
    /// aborts the response. I/O errors reading the file propagate. With <paramref name="flushAtEnd"/> off, the last
    /// chunk is left for the server's end-of-response flush (headers and a small body then leave in one write).
    /// With a <paramref name="stamp"/> (the version the headers describe), the file is checked once more after the last
    /// read and before that chunk leaves: if it was rewritten meanwhile, the chunk is held back and the status is
    /// <see cref="FileSendStatus.Changed"/>.
    /// </summary>
    public static ValueTask<FileSendStatus> WriteAsync(
        PipeWriter writer,
        SafeFileHandle file,
        FileStamp? stamp,
        long offset,
        long count,
        int bufferSize,
        long synchronousReadThreshold,
        CancellationToken cancellationToken,
        bool flushAtEnd = true)
    {
        if (count == 0)
        {
            return new ValueTask<FileSendStatus>(FileSendStatus.Completed);
        }

        // Hints over Kestrel's block make its pipe rent 64 KiB arrays from ArrayPool.Shared, which keeps 32 per size and
        // core; each body being written holds one or two until they are sent. Past MaxLargeReaders bodies at once the
        // pool runs dry and every read allocates a fresh array: 256 connections downloading 1 MiB allocated 800 KB per
        // response and ran at 0.46x stock (benchmarks/results/sendfile-final-2026-11-24). Those bodies are staged: the
        // same large reads into one array rented for the read and returned at once, copied into Kestrel's blocks (4 KiB
        // reads straight into the blocks instead halved 1 MiB throughput: 16 system calls per 64 KiB).
        bool large = bufferSize > ReadSizePolicy.KestrelBlockSize;
        bool staged = false;
        if (large && Interlocked.Increment(ref s_largeReaders) > MaxLargeReaders)
        {
            Interlocked.Decrement(ref s_largeReaders);
            large = false;
            staged = true;
        }

        return WriteCoreAsync(writer, file, stamp, offset, count, bufferSize, count <= synchronousReadThreshold, flushAtEnd, large, staged, cancellationToken);
    }

    private static async ValueTask<FileSendStatus> WriteCoreAsync(
        PipeWriter writer, SafeFileHandle file, FileStamp? stamp, long offset, long count, int bufferSize, bool synchronousReads, bool flushAtEnd, bool large, bool staged, CancellationToken cancellationToken)
    {
        long remaining = count;
        bool flushed = false;
        BatchState? state = null;
        try
        {
            while (remaining > 0)
            {
                int batch = (int)Math.Min(remaining, FlushThreshold);

                // Small bodies: pread(2) on the request thread; a page-cache hit costs about a microsecond, far less
                // than a thread-pool hop. Large bodies: the same reads, one thread-pool hop per 64 KiB batch, so a
                // cold disk cannot stall request threads and 4 KiB reads do not each pay for a hop.
                int read;
                if (synchronousReads)
                {
                    read = ReadBatch(writer, file, offset, batch, bufferSize, staged);
                }
                else
                {
                    state ??= new BatchState(writer, file, bufferSize, staged);
                    state.Offset = offset;
                    state.Count = batch;
                    read = await Task.Factory.StartNew(BatchState.Run, state, cancellationToken, TaskCreationOptions.DenyChildAttach, TaskScheduler.Default);
                }

                offset += read;
                remaining -= read;
                if (read < batch)
                {
                    // What was read is real file content; the caller aborts so the short body cannot look complete.
                    return FileSendStatus.Truncated;
                }

                // Every byte is read: if the file was written into since the headers were built (its stamp moved), the
                // body may mix two versions. The last batch is still unflushed in the pipe and the caller aborts, so it
                // never leaves and the body cannot look complete. A write after this check cannot reach bytes already
                // copied.
                if (remaining == 0 && stamp is { } expected && !expected.StillMatches(file))
                {
                    return FileSendStatus.Changed;
                }

                // Kestrel's HTTP/1.1 producer flushes at the end only what it counted as unflushed (headers and
                // Write calls, not Advance after a flush), so once we have flushed, the tail must be flushed too.
                if (remaining > 0 || flushAtEnd || flushed)
                {
                    flushed = true;
                    FlushResult result = await writer.FlushAsync(cancellationToken);
                    if (result.IsCompleted || result.IsCanceled)
                    {
                        return remaining == 0 && !result.IsCanceled ? FileSendStatus.Completed : FileSendStatus.ClientDisconnected;
                    }
                }
            }
        }
        catch (Exception ex) when (IsDisconnect(ex, cancellationToken))
        {
            return FileSendStatus.ClientDisconnected;
        }
        finally
        {
            if (large)
            {
                Interlocked.Decrement(ref s_largeReaders);
            }
        }

        return FileSendStatus.Completed;
    }

    /// <summary>
    /// Reads up to <paramref name="count"/> bytes straight into the writer's memory, <paramref name="bufferSize"/>
    /// at a time, advancing after each read. Returns fewer bytes only at end of file.
    /// </summary>
    private static int ReadBatch(PipeWriter writer, SafeFileHandle file, long offset, int count, int bufferSize, bool staged)
    {
        if (staged)
        {
            return ReadStaged(writer, file, offset, count, bufferSize);
        }

        int done = 0;
        while (done < count)
        {
            // A hint no larger than Kestrel's 4 KiB block keeps the memory on its pinned pool; larger hints make
            // the pipe rent from ArrayPool, which many concurrent HTTP/2 streams exhaust (measured: 38 KB
            // allocated per 64 KiB response at 70 streams).
            Span<byte> span = writer.GetSpan(Math.Min(bufferSize, count - done));
            if (span.Length > count - done)
            {
                span = span[..(count - done)];
            }

            int read = RandomAccess.Read(file, span, offset + done);
            if (read == 0)
            {
                break;
            }

            writer.Advance(read);
            done += read;
        }

        return done;
    }

    /// <summary>Reads into an array rented for the call (the thread's own ArrayPool slot) and copies into the writer.</summary>
    private static int ReadStaged(PipeWriter writer, SafeFileHandle file, long offset, int count, int bufferSize)
    {
        byte[] buffer = ArrayPool<byte>.Shared.Rent(bufferSize);
        try
        {
            int done = 0;
            while (done < count)
            {
                int read = RandomAccess.Read(file, buffer.AsSpan(0, Math.Min(bufferSize, count - done)), offset + done);
                if (read == 0)
                {
                    break;
                }

                writer.Write(buffer.AsSpan(0, read));
                done += read;
            }

            return done;
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }

    /// <summary>The reusable argument of one response's thread-pool batches (the writer is used by one batch at a time).</summary>
    private sealed class BatchState(PipeWriter writer, SafeFileHandle file, int bufferSize, bool staged)
    {
        public static readonly Func<object?, int> Run = static s =>
        {
            var state = (BatchState)s!;
            return ReadBatch(state._writer, state._file, state.Offset, state.Count, state._bufferSize, state._staged);
        };

        private readonly bool _staged = staged;

        private readonly PipeWriter _writer = writer;
        private readonly SafeFileHandle _file = file;
        private readonly int _bufferSize = bufferSize;

        public long Offset { get; set; }

        public int Count { get; set; }
    }

    private static bool IsDisconnect(Exception ex, CancellationToken cancellationToken) => ex switch
    {
        OperationCanceledException => cancellationToken.IsCancellationRequested,
        ConnectionResetException or ConnectionAbortedException => true,
        // A write to a connection that has already been torn down.
        InvalidOperationException => cancellationToken.IsCancellationRequested,
        _ => false,
    };
}
