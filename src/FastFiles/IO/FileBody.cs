using FastFiles.Files;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.IO;

/// <summary>
/// A file range as a response body: through the connection's zero-copy sender when there is one and it takes the
/// response, else copied by <see cref="FileBodyWriter"/>. With a stamp (the version the headers were built from), both
/// check the file once more before the body's last bytes leave (<see cref="FileSendStatus.Changed"/>).
/// </summary>
internal static class FileBody
{
    public static ValueTask<FileSendStatus> WriteAsync(
        IFeatureCollection features,
        SafeFileHandle file,
        FileStamp? stamp,
        long offset,
        long count,
        int bufferSize,
        long synchronousReadThreshold,
        CancellationToken cancellationToken,
        bool flushAtEnd = true)
    {
        if (count > 0 && features.Get<IZeroCopyFileSender>() is { } sender)
        {
            return SendOrCopyAsync(sender, features, file, stamp, offset, count, bufferSize, synchronousReadThreshold, flushAtEnd, cancellationToken);
        }

        return Copy(features, file, stamp, offset, count, bufferSize, synchronousReadThreshold, flushAtEnd, cancellationToken);
    }

    private static async ValueTask<FileSendStatus> SendOrCopyAsync(
        IZeroCopyFileSender sender,
        IFeatureCollection features,
        SafeFileHandle file,
        FileStamp? stamp,
        long offset,
        long count,
        int bufferSize,
        long synchronousReadThreshold,
        bool flushAtEnd,
        CancellationToken cancellationToken)
    {
        if (await sender.TrySendAsync(features, file, stamp, stampChecked: false, offset, count, cancellationToken) is { } sent)
        {
            return sent;
        }

        FileSendStatus copied = await Copy(features, file, stamp, offset, count, bufferSize, synchronousReadThreshold, flushAtEnd, cancellationToken);
        if (copied == FileSendStatus.Completed)
        {
            sender.Copied(count);
        }

        return copied;
    }

    private static ValueTask<FileSendStatus> Copy(
        IFeatureCollection features, SafeFileHandle file, FileStamp? stamp, long offset, long count, int bufferSize, long synchronousReadThreshold, bool flushAtEnd, CancellationToken cancellationToken)
        => FileBodyWriter.WriteAsync(
            features.Get<IHttpResponseBodyFeature>()!.Writer, file, stamp, offset, count, bufferSize, synchronousReadThreshold, cancellationToken, flushAtEnd);
}
