using FastFiles.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>The per-connection request header cache for one Kestrel endpoint (beside its connection middleware).</summary>
public static class RequestHeaderCacheListenOptionsExtensions
{
    /// <summary>
    /// Gives every connection on this endpoint a small cache of the request header values FastFiles parses
    /// (If-Modified-Since, If-Unmodified-Since, If-Range, Accept-Encoding), so a value
    /// repeated on a connection is parsed once. Unused when string reuse is disabled.
    /// </summary>
    /// <param name="listenOptions">The endpoint.</param>
    /// <returns>The endpoint.</returns>
    public static ListenOptions UseRequestHeaderCache(this ListenOptions listenOptions)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        listenOptions.Use(next => new RequestHeaderCacheConnectionMiddleware(next).OnConnectionAsync);
        return listenOptions;
    }
}
