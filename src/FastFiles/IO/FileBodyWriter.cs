using System.IO.Pipelines;
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

    /// <summary>
    /// Writes <paramref name="count"/> bytes of <paramref name="file"/> starting at <paramref name="offset"/>.
    /// Never throws for a client disconnect or a truncated file: the status says what happened and the caller
    /// aborts the response. I/O errors reading the file propagate. With <paramref name="flushAtEnd"/> off, the last
    /// chunk is left for the server's end-of-response flush (headers and a small body then leave in one write).
    /// </summary>
    public static ValueTask<FileSendStatus> WriteAsync(
        PipeWriter writer,
        SafeFileHandle file,
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

        return WriteCoreAsync(writer, file, offset, count, bufferSize, count <= synchronousReadThreshold, flushAtEnd, cancellationToken);
    }

    private static async ValueTask<FileSendStatus> WriteCoreAsync(
        PipeWriter writer, SafeFileHandle file, long offset, long count, int bufferSize, bool synchronousReads, bool flushAtEnd, CancellationToken cancellationToken)
    {
        long remaining = count;
        int unflushed = 0;
        bool flushed = false;
        try
        {
            while (remaining > 0)
            {
                Memory<byte> memory = writer.GetMemory((int)Math.Min(bufferSize, remaining));
                if (memory.Length > remaining)
                {
                    memory = memory[..(int)remaining];
                }

                // Small bodies: pread(2) on the request thread. A page-cache hit costs about a microsecond, far
                // less than a thread-pool hop; the method only goes asynchronous when a flush must wait for the
                // client. Large bodies read asynchronously so a cold disk cannot stall request threads.
                int read = synchronousReads
                    ? RandomAccess.Read(file, memory.Span, offset)
                    : await RandomAccess.ReadAsync(file, memory, offset, cancellationToken);
                if (read == 0)
                {
                    return FileSendStatus.Truncated;
                }

                writer.Advance(read);
                offset += read;
                remaining -= read;
                unflushed += read;

                // Kestrel's HTTP/1.1 producer flushes at the end only what it counted as unflushed (headers and
                // Write calls, not Advance after a flush), so once we have flushed, the tail must be flushed too.
                if (unflushed >= FlushThreshold || (remaining == 0 && (flushAtEnd || flushed)))
                {
                    flushed = true;
                    unflushed = 0;
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

        return FileSendStatus.Completed;
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
