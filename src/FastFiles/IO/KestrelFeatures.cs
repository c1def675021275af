using System.Reflection;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace FastFiles.IO;

internal static class KestrelFeatures
{
    private static readonly Assembly KestrelCore = typeof(KestrelServerOptions).Assembly;

    /// <summary>
    /// True when <paramref name="feature"/> is Kestrel's own response body (its per-request protocol object), so
    /// its <see cref="IHttpResponseBodyFeature.Writer"/> is the connection's output and nothing above us has
    /// wrapped the body (compression, caching, a test server).
    /// </summary>
    public static bool IsKestrelResponseBody(IHttpResponseBodyFeature feature)
        => feature is IHttpRequestLifetimeFeature && feature.GetType().Assembly == KestrelCore;

    /// <summary>Kestrel's own response body, directly or behind <c>UseFastSendFile</c> (which forwards its writer unchanged).</summary>
    public static bool IsKestrelBody(IHttpResponseBodyFeature feature)
        => IsKestrelResponseBody(feature) || (feature is IForwardingResponseBody forwarding && IsKestrelResponseBody(forwarding.Inner));
}

/// <summary>A response body feature that forwards Kestrel's writer unchanged (<c>UseFastSendFile</c>'s).</summary>
internal interface IForwardingResponseBody
{
    IHttpResponseBodyFeature Inner { get; }
}
