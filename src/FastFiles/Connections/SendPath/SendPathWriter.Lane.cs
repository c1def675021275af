using FastFiles.Files;
using FastFiles.IO;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Connections.SendPath;

/// <summary>
/// The static lane's way to the socket: the lane runs inside the send path and writes its responses here itself,
/// before Kestrel sees the connection, so a file body needs no hole in Kestrel's writer: what the lane has written
/// (earlier pipelined responses and this response's head) goes out with MSG_MORE, then the body by sendfile(2).
/// </summary>
internal sealed partial class SendPathWriter
{
    /// <summary>
    /// Sends everything written so far, then <paramref name="count"/> bytes of <paramref name="file"/> from
    /// <paramref name="offset"/>, checking before the final chunk that the file still has <paramref name="stamp"/> (the
    /// version the head describes). Anything but <see cref="FileSendStatus.Completed"/> means the connection was aborted.
    /// </summary>
    public ValueTask<FileSendStatus?> SendAfterWrittenAsync(SafeFileHandle file, FileStamp stamp, long offset, long count, MinDataRate? rate)
    {
        CommitTail();
        _unflushed = 0;
        if (_failed || _released)
        {
            DropQueued();
            return new ValueTask<FileSendStatus?>(FileSendStatus.ClientDisconnected);
        }

        return SendHoleAsync(file, stamp, offset, count, rate);
    }
}
