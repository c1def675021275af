using FastFiles.Files;
using FastFiles.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.IO;

/// <summary>
/// A connection-level send path that can put a file range on the wire without copying it through user space
/// (sendfile(2)). Implemented by <c>FastFiles.Connections</c>; a body writer finds it in the request's features, which
/// fall back to the connection's.
/// </summary>
internal interface IZeroCopyFileSender
{
    /// <summary>
    /// Sends <paramref name="count"/> bytes of <paramref name="file"/> from <paramref name="offset"/> as the body of the
    /// current response, whose Content-Length must already say so. Returns <see langword="null"/> when this response
    /// cannot go this way (the reason is recorded): nothing was written then and the caller copies instead. With a
    /// <paramref name="stamp"/>, the file is checked before the last bytes are sent and, if it was rewritten since, the
    /// connection is aborted with those bytes held back (<see cref="FileSendStatus.Changed"/>).
    /// <paramref name="stampChecked"/>: the caller compared the descriptor with <paramref name="stamp"/> just before this
    /// call, so a body that is all final chunk needs no second look if nothing waits before its first send.
    /// </summary>
    ValueTask<FileSendStatus?> TrySendAsync(IFeatureCollection features, SafeFileHandle file, FileStamp? stamp, bool stampChecked, long offset, long count, CancellationToken cancellationToken);

    /// <summary>
    /// Sends a multipart/byteranges body (<paramref name="body"/>, whose length the Content-Length must already say):
    /// each part's header block, its range of <paramref name="file"/> without a copy, then the closing delimiter. As
    /// <see cref="TrySendAsync"/> otherwise; the stamp is checked before the last part's last bytes.
    /// </summary>
    ValueTask<FileSendStatus?> TrySendMultipartAsync(IFeatureCollection features, SafeFileHandle file, FileStamp? stamp, bool stampChecked, MultipartByteRanges body, CancellationToken cancellationToken);

    /// <summary>Cached bodies from this length on are sent from the file rather than copied from memory.</summary>
    long CachedMinimumLength { get; }

    /// <summary>Counts body bytes that took the copy path on a connection that has this sender.</summary>
    void Copied(long count);
}
