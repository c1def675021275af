using FastFiles.Hosting;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>The HTTP/1.1 static lane on a Kestrel endpoint.</summary>
public static class StaticLaneListenOptionsExtensions
{
    /// <summary>
    /// Adds the HTTP/1.1 static lane to an endpoint: GET and HEAD requests for files under the lane's roots are answered
    /// from prebuilt response bytes before Kestrel parses them; the first request the lane does not fully handle, and
    /// everything after it on that connection, goes to Kestrel untouched. Call it after <c>UseHttps</c> on TLS endpoints.
    /// HTTP/2 connections pass through. Requests the lane answers never reach the application's middleware (no
    /// authentication, authorization, rewrites or endpoint routing; a host outside the app's <c>AllowedHosts</c> goes to
    /// the app): hand it only public roots.
    /// </summary>
    /// <param name="listenOptions">The endpoint.</param>
    /// <param name="configure">
    /// Adds the roots for this endpoint. When <see langword="null"/> (the default), the application's
    /// <see cref="StaticLaneOptions"/> apply: <c>services.ConfigureStaticLane(...)</c> and the <c>FastFiles:StaticLane</c>
    /// configuration section.
    /// </param>
    /// <returns>The endpoint.</returns>
    public static ListenOptions UseStaticLane(this ListenOptions listenOptions, Action<StaticLaneOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        StaticLaneOptions? lane = null;
        if (configure is not null)
        {
            lane = new StaticLaneOptions();
            configure(lane);
        }

        return listenOptions.UseStaticLane(lane);
    }

    internal static ListenOptions UseStaticLane(this ListenOptions listenOptions, StaticLaneOptions? lane)
    {
        listenOptions.Use(next => StaticLaneWiring.CreateLane(next, lane, listenOptions));
        return listenOptions;
    }
}
