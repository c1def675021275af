using System.IO.Pipelines;
using Microsoft.AspNetCore.Connections;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.IO;

/// <summary>
/// The copy for files that only exist as a stream (embedded resources and other non-physical providers): reads
/// straight into the writer's memory, as <see cref="FileBodyWriter"/> does for handles.
/// </summary>
internal static class StreamBodyWriter
{
    public static async ValueTask<FileSendStatus> WriteAsync(
        PipeWriter writer, IFileInfo file, long offset, long count, int bufferSize, CancellationToken cancellationToken)
    {
        await using Stream stream = file.CreateReadStream();
        try
        {
            if (offset > 0)
            {
                if (stream.CanSeek)
                {
                    stream.Seek(offset, SeekOrigin.Begin);
                }
                else if (!await SkipAsync(stream, offset, bufferSize, cancellationToken))
                {
                    return FileSendStatus.Truncated;
                }
            }

            long remaining = count;
            int unflushed = 0;
            while (remaining > 0)
            {
                Memory<byte> memory = writer.GetMemory((int)Math.Min(bufferSize, remaining));
                if (memory.Length > remaining)
                {
                    memory = memory[..(int)remaining];
                }

                int read = await stream.ReadAsync(memory, cancellationToken);
                if (read == 0)
                {
                    return FileSendStatus.Truncated;
                }

                writer.Advance(read);
                remaining -= read;
                unflushed += read;
                if (unflushed >= FileBodyWriter.FlushThreshold || remaining == 0)
                {
                    unflushed = 0;
                    FlushResult result = await writer.FlushAsync(cancellationToken);
                    if (result.IsCanceled || (result.IsCompleted && remaining > 0))
                    {
                        return FileSendStatus.ClientDisconnected;
                    }
                }
            }
        }
        catch (Exception ex) when (ex is ConnectionResetException or ConnectionAbortedException
            || (ex is OperationCanceledException && cancellationToken.IsCancellationRequested))
        {
            return FileSendStatus.ClientDisconnected;
        }

        return FileSendStatus.Completed;
    }

    private static async ValueTask<bool> SkipAsync(Stream stream, long offset, int bufferSize, CancellationToken cancellationToken)
    {
        byte[] scratch = System.Buffers.ArrayPool<byte>.Shared.Rent(bufferSize);
        try
        {
            while (offset > 0)
            {
                int read = await stream.ReadAsync(scratch.AsMemory(0, (int)Math.Min(scratch.Length, offset)), cancellationToken);
                if (read == 0)
                {
                    return false;
                }

                offset -= read;
            }

            return true;
        }
        finally
        {
            System.Buffers.ArrayPool<byte>.Shared.Return(scratch);
        }
    }
}
