using FastFiles.Connections;
using FastFiles.Diagnostics;
using FastFiles.Hosting;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>TLS record coalescing for one Kestrel endpoint (beside its connection middleware).</summary>
public static class TlsRecordCoalescingListenOptionsExtensions
{
    /// <summary>
    /// Makes Kestrel's writes reach <c>SslStream</c> in 16 KiB buffers, so responses go out in full-size TLS records
    /// (RFC 8446 5.1) instead of one record per 4 KiB memory-pool block; inline, with no extra pipe or thread. Call it
    /// after <c>UseHttps</c>; connections without TLS pass through. See
    /// <see cref="FastFilesKestrelOptions.EnableTlsRecordCoalescing"/> for what it was measured to gain and cost.
    /// </summary>
    /// <param name="listenOptions">The endpoint.</param>
    /// <returns>The endpoint.</returns>
    public static ListenOptions UseTlsRecordCoalescing(this ListenOptions listenOptions)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        ConnectionPartsCoverage.TrackTlsSide(listenOptions);
        listenOptions.Use(next => new TlsRecordCoalescingConnectionMiddleware(next, FastFilesMetrics.For(listenOptions.ApplicationServices)).OnConnectionAsync);
        return listenOptions;
    }
}
