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
    /// cannot go this way (the reason is recorded): nothing was written then and the caller copies instead.
    /// </summary>
    ValueTask<FileSendStatus?> TrySendAsync(IFeatureCollection features, SafeFileHandle file, long offset, long count, CancellationToken cancellationToken);

    /// <summary>Counts body bytes that took the copy path on a connection that has this sender.</summary>
    void Copied(long count);
}
