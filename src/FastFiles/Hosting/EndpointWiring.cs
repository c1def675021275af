using FastFiles.Connections;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Logging;

namespace FastFiles.Hosting;

/// <summary>
/// How FastFiles' connection parts reach the endpoints Kestrel builds itself: those read from configuration
/// (<c>Kestrel:Endpoints</c>) and those bound from URLs. Connection middleware order, outermost first: descriptor
/// reserve, send path (plaintext only), TLS, record coalescing, static lane, request header cache, output stage.
/// </summary>
internal static class EndpointWiring
{
    /// <summary>
    /// A URL-bound endpoint, from the endpoint-defaults callback (<see cref="ConnectionPartsCoverage.Register"/>); on
    /// HTTPS, TLS has been added just before (the descriptor reserve went in front of it).
    /// </summary>
    public static void ApplyToUrlEndpoint(ListenOptions listen, bool https, FastFilesKestrelOptions fastFiles)
    {
        if (!https && fastFiles.EnableZeroCopySendFile)
        {
            listen.UseZeroCopySendFile();
        }

        if (fastFiles.EnableRequestHeaderCache)
        {
            listen.UseRequestHeaderCache();
        }

        if (https && fastFiles.EnableTlsRecordCoalescing)
        {
            listen.UseTlsRecordCoalescing();
        }

        if (https && fastFiles.EnableHttp2TlsOutputStage)
        {
            listen.UseHttp2TlsOutputStage(fastFiles.Http2TlsOutputStage);
        }
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
                if (fastFiles.EnableZeroCopySendFile && !e.IsHttps)
                {
                    e.ListenOptions.UseZeroCopySendFile();
                }

                if (fastFiles.EnableRequestHeaderCache)
                {
                    e.ListenOptions.UseRequestHeaderCache();
                }

                bool tlsApplied = false;
                if (staged || fastFiles.EnableTlsRecordCoalescing || (fastFiles.EnableStaticLane && e.IsHttps))
                {
                    tlsApplied = UseTlsParts(e, fastFiles.EnableTlsRecordCoalescing, staged ? stage : null);
                }

                // The lane must see plaintext: on an HTTPS endpoint FastFiles could not take TLS over (SNI), it stays off.
                if (fastFiles.EnableStaticLane && (!e.IsHttps || tlsApplied))
                {
                    e.ListenOptions.UseStaticLane(lane: null);
                }
            });
        }
    }

    /// <summary>
    /// Applies TLS with the options the loader assembled, then record coalescing and/or the stage on its plaintext side.
    /// True when TLS is now applied here (so later connection middleware sees plaintext).
    /// </summary>
    public static bool UseTlsParts(EndpointConfiguration endpoint, bool coalesceRecords, Http2TlsOutputStageOptions? stage)
    {
        if (!endpoint.IsHttps)
        {
            return false;
        }

        ILogger logger = Http2TlsOutputStageListenOptionsExtensions.CreateLogger(endpoint.ListenOptions.ApplicationServices);
        string name = endpoint.ConfigSection.Key;
        if (endpoint.ConfigSection.GetSection("Sni").GetChildren().Any())
        {
            // Kestrel's SNI selector (per-host certificates, protocols and client-certificate modes) is internal, so
            // Kestrel keeps adding TLS here; the parts go after its TLS once the loader has run (startup filter).
            ConnectionPartsCoverage.AfterKestrelTls(endpoint.ListenOptions, name, listen =>
            {
                if (coalesceRecords)
                {
                    listen.UseTlsRecordCoalescing();
                }

                if (stage is not null)
                {
                    listen.UseHttp2TlsOutputStage(stage);
                }
            });
            return false;
        }

        // The loader skips its own UseHttps when the endpoint is already TLS; HttpsOptions already holds the certificate.
        endpoint.ListenOptions.UseHttps(endpoint.HttpsOptions);
        if (coalesceRecords)
        {
            endpoint.ListenOptions.UseTlsRecordCoalescing();
        }

        if (stage is not null)
        {
            endpoint.ListenOptions.UseHttp2TlsOutputStage(stage);
        }

        Log.ConfigurationEndpointStaged(logger, name);
        return true;
    }
}
