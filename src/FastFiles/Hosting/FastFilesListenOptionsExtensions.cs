using FastFiles.Connections;
using FastFiles.Diagnostics;
using FastFiles.Hosting;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>All of FastFiles' connection-level parts for one code-configured Kestrel endpoint.</summary>
public static class FastFilesListenOptionsExtensions
{
    /// <summary>
    /// FastFiles' connection-level parts for a code-configured endpoint: the per-connection request header cache and the
    /// static lane (<see cref="FastFilesKestrelOptions.EnableStaticLane"/>, off by default), plaintext or behind TLS; and
    /// when this follows <c>UseHttps</c>, TLS record coalescing (<see cref="FastFilesKestrelOptions.EnableTlsRecordCoalescing"/>,
    /// on by default) and the HTTP/2 TLS output stage (<see cref="FastFilesKestrelOptions.EnableHttp2TlsOutputStage"/>,
    /// off by default). Plaintext connections pass through the TLS-side parts. Uses the options given to
    /// <c>KestrelServerOptions.UseFastFilesConnections(...)</c> on the same server if any, else the defaults.
    /// </summary>
    /// <param name="listenOptions">The endpoint; call after <c>UseHttps</c> for TLS endpoints.</param>
    /// <returns>The endpoint.</returns>
    public static ListenOptions UseFastFilesConnections(this ListenOptions listenOptions)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        ConnectionPartsCoverage.TrackTlsSide(listenOptions);
        // Resolved when the endpoint is built, so KestrelServerOptions.UseFastFilesConnections may run before or after this call.
        listenOptions.Use(next =>
        {
            FastFilesKestrelOptions options = FastFilesKestrelState.OptionsFor(listenOptions);
            ConnectionDelegate pipeline = EndpointWiring.ComposeParts(next, options, listenOptions, EndpointWiring.InnerParts.All);

            // First of these: a connection within the descriptor reserve gets none of them.
            return DescriptorReserveConnectionMiddleware.Wrap(pipeline, options.DescriptorReserve, listenOptions);
        });
        return listenOptions;
    }
}
