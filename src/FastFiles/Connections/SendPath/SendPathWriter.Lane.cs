using System.Runtime.CompilerServices;
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
    /// version the head describes; the caller has just compared them). Anything but <see cref="FileSendStatus.Completed"/> means the connection was aborted.
    /// </summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<FileSendStatus?> SendAfterWrittenAsync(SafeFileHandle file, FileStamp stamp, long offset, long count, MinDataRate? rate)
    {
        CommitTail();
        _unflushed = 0;

        // The lane flushes while it holds the input, so it never holds a flush back for a batch; taking the socket is
        // immediate unless that changes.
        ValueTask owning = BeginOwnerSendAsync();
        bool stampChecked = owning.IsCompleted;
        await owning;
        try
        {
            if (_failed || _released)
            {
                lock (_sync)
                {
                    DropQueued();
                }

                return FileSendStatus.ClientDisconnected;
            }

            return await SendHoleAsync(file, stamp, stampChecked, offset, count, multipart: null, rate);
        }
        finally
        {
            EndOwnerSend();
        }
    }
}
