using FastFiles.Connections;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging;

namespace FastFiles.Hosting;

/// <summary>
/// How FastFiles' connection parts reach the endpoints Kestrel builds itself: those read from configuration
/// (<c>Kestrel:Endpoints</c>) and those bound from URLs. Connection middleware order, outermost first: descriptor
/// reserve, send path (plaintext only), TLS, then <see cref="ComposeParts"/>.
/// </summary>
internal static class EndpointWiring
{
    /// <summary>
    /// A URL-bound endpoint, from the endpoint-defaults callback (<see cref="ConnectionPartsCoverage.Register"/>); on
    /// HTTPS, TLS has been added just before (the descriptor reserve went in front of it), so every part sees plaintext.
    /// </summary>
    public static void ApplyToUrlEndpoint(ListenOptions listen, bool https, FastFilesKestrelOptions fastFiles)
    {
        if (!https && fastFiles.EnableZeroCopySendFile)
        {
            listen.UseZeroCopySendFile();
        }

        UseParts(listen, fastFiles, https ? InnerParts.All : InnerParts.HeaderCache | InnerParts.Lane);
    }

    /// <summary>
    /// One <c>ConfigurationLoader.Endpoint(name, ...)</c> callback per configured endpoint, which on an HTTPS endpoint
    /// applies TLS itself with the HTTPS options the loader assembled (certificate included) so the TLS-side parts see
    /// plaintext; the loader then sees the endpoint is already TLS and does not add TLS again.
    /// </summary>
    public static void ApplyToConfigurationEndpoints(KestrelConfigurationLoader loader, FastFilesKestrelOptions fastFiles)
    {
        Http2TlsOutputStageOptions stage = fastFiles.Http2TlsOutputStage;
        bool staged = fastFiles.EnableHttp2TlsOutputStage && stage.Mode != Http2TlsOutputStageMode.Disabled;
        foreach (IConfigurationSection endpoint in loader.Configuration.GetSection("Endpoints").GetChildren())
        {
            loader.Endpoint(endpoint.Key, e =>
            {
                // Outermost: a connection within the descriptor reserve is closed before anything is set up for it.
                DescriptorReserveConnectionMiddleware.Use(e.ListenOptions, fastFiles.DescriptorReserve);

                // Next: nothing may wrap the connection between the socket and the send path.
                if (!e.IsHttps)
                {
                    if (fastFiles.EnableZeroCopySendFile)
                    {
                        e.ListenOptions.UseZeroCopySendFile();
                    }

                    UseParts(e.ListenOptions, fastFiles, InnerParts.HeaderCache | InnerParts.Lane);
                    return;
                }

                if (!(staged || fastFiles.EnableTlsRecordCoalescing || fastFiles.EnableStaticLane))
                {
                    // Nothing needs plaintext: Kestrel adds TLS after this callback as usual.
                    UseParts(e.ListenOptions, fastFiles, InnerParts.HeaderCache);
                    return;
                }

                if (ConnectionPartsCoverage.IsTls(e.ListenOptions))
                {
                    // The app's endpoint defaults, which Kestrel runs before this callback, already added TLS: the parts go
                    // behind it, and the loader adds no TLS of its own.
                    UseParts(e.ListenOptions, fastFiles, InnerParts.All);
                    return;
                }

                if (e.ConfigSection.GetSection("Sni").GetChildren().Any())
                {
                    // Kestrel's SNI selector (per-host certificates, protocols and client-certificate modes) is internal, so
                    // Kestrel keeps adding TLS here; the plaintext-side parts go after its TLS once the loader has run.
                    UseParts(e.ListenOptions, fastFiles, InnerParts.HeaderCache);
                    ConnectionPartsCoverage.AfterKestrelTls(
                        e.ListenOptions, e.ConfigSection.Key, listen => UseParts(listen, fastFiles, InnerParts.TlsSide | InnerParts.Lane));
                    return;
                }

                UseTls(e, string.Join(", ", new[]
                {
                    fastFiles.EnableTlsRecordCoalescing ? "TLS record coalescing" : null,
                    staged ? "HTTP/2 TLS output stage" : null,
                    fastFiles.EnableStaticLane ? "static lane" : null,
                }.OfType<string>()));
                UseParts(e.ListenOptions, fastFiles, InnerParts.All);
            });
        }
    }

    /// <summary>The parts that need plaintext, and so go behind TLS on an HTTPS endpoint.</summary>
    [Flags]
    internal enum InnerParts
    {
        /// <summary>The per-connection request header cache (sees no bytes: either side of TLS).</summary>
        HeaderCache = 1,

        /// <summary>TLS record coalescing and the HTTP/2 TLS output stage (pass plaintext connections through).</summary>
        TlsSide = 2,

        /// <summary>The static lane (HTTP/1.1 bytes).</summary>
        Lane = 4,

        All = HeaderCache | TlsSide | Lane,
    }

    /// <summary>
    /// The one order of FastFiles' plaintext-side parts, outermost first: TLS record coalescing (it also coalesces what the
    /// stage drains), static lane (a connection it hands off still gets the parts behind it), request header cache,
    /// HTTP/2 TLS output stage. Code-configured, URL-bound and configured endpoints all build it here; in front of it go
    /// the descriptor reserve, the send path (plaintext) and TLS.
    /// </summary>
    internal static ConnectionDelegate ComposeParts(ConnectionDelegate next, FastFilesKestrelOptions options, ListenOptions listen, InnerParts parts)
    {
        ConnectionDelegate pipeline = next;
        if ((parts & InnerParts.TlsSide) != 0 && options.EnableHttp2TlsOutputStage)
        {
            pipeline = Http2TlsOutputStageListenOptionsExtensions.CreateStage(pipeline, options.Http2TlsOutputStage, listen);
        }

        if ((parts & InnerParts.HeaderCache) != 0 && options.EnableRequestHeaderCache)
        {
            pipeline = new RequestHeaderCacheConnectionMiddleware(pipeline).OnConnectionAsync;
        }

        if ((parts & InnerParts.Lane) != 0 && options.EnableStaticLane)
        {
            pipeline = StaticLaneWiring.CreateLane(pipeline, lane: null, listen);
        }

        if ((parts & InnerParts.TlsSide) != 0 && options.EnableTlsRecordCoalescing)
        {
            pipeline = new TlsRecordCoalescingConnectionMiddleware(pipeline, FastFilesMetrics.For(listen.ApplicationServices)).OnConnectionAsync;
        }

        return pipeline;
    }

    private static void UseParts(ListenOptions listen, FastFilesKestrelOptions options, InnerParts parts)
    {
        if ((parts & InnerParts.TlsSide) != 0 && (options.EnableTlsRecordCoalescing || options.EnableHttp2TlsOutputStage || options.EnableStaticLane))
        {
            ConnectionPartsCoverage.TrackTlsSide(listen);
        }

        listen.Use(next => ComposeParts(next, options, listen, parts));
    }

    /// <summary>Applies TLS with the HTTPS options the loader assembled (certificate included).</summary>
    private static void UseTls(EndpointConfiguration endpoint, string parts)
    {
        // The loader skips its own UseHttps when the endpoint is already TLS; HttpsOptions already holds the certificate.
        endpoint.ListenOptions.UseHttps(endpoint.HttpsOptions);
        Log.ConfigurationEndpointStaged(Http2TlsOutputStageListenOptionsExtensions.CreateLogger(endpoint.ListenOptions.ApplicationServices), endpoint.ConfigSection.Key, parts);
    }

    /// <summary>
    /// For an app's own <c>ConfigurationLoader.Endpoint(name, ...)</c> callback: applies TLS with the options the loader
    /// assembled, then the stage on its plaintext side (behind Kestrel's own TLS on an SNI endpoint).
    /// </summary>
    public static void UseStage(EndpointConfiguration endpoint, Http2TlsOutputStageOptions stage)
    {
        if (!endpoint.IsHttps)
        {
            return;
        }

        if (endpoint.ConfigSection.GetSection("Sni").GetChildren().Any())
        {
            ConnectionPartsCoverage.AfterKestrelTls(endpoint.ListenOptions, endpoint.ConfigSection.Key, listen => listen.UseHttp2TlsOutputStage(stage));
            return;
        }

        UseTls(endpoint, "HTTP/2 TLS output stage");
        endpoint.ListenOptions.UseHttp2TlsOutputStage(stage);
    }
}
