using FastFiles.Connections;
using FastFiles.Diagnostics;
using FastFiles.Hosting;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>The HTTP/2 TLS output stage for one Kestrel endpoint (beside its connection middleware).</summary>
public static class Http2TlsOutputStageListenOptionsExtensions
{
    internal const string LoggerCategory = "FastFiles.Connections.Http2TlsOutputStage";

    /// <summary>
    /// Adds the HTTP/2 TLS output stage to an endpoint. Call it after <c>UseHttps</c> so it sees plaintext; on an
    /// endpoint without TLS it passes every connection through. Uses the server's FastFiles Kestrel options
    /// (<c>KestrelServerOptions.UseFastFilesConnections(...)</c> and the <c>FastFiles:Kestrel</c> section) if given,
    /// else the defaults (<see cref="Http2TlsOutputStageMode.Http2Only"/>, bounded by Kestrel's <c>MaxResponseBufferSize</c>).
    /// </summary>
    /// <param name="listenOptions">The endpoint.</param>
    /// <returns>The endpoint.</returns>
    public static ListenOptions UseHttp2TlsOutputStage(this ListenOptions listenOptions)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        ConnectionPartsCoverage.TrackTlsSide(listenOptions);
        // Resolved when the endpoint is built, so UseFastFilesConnections may run before or after this call.
        listenOptions.Use(next => CreateStage(next, FastFilesKestrelState.OptionsFor(listenOptions).Http2TlsOutputStage, listenOptions));
        return listenOptions;
    }

    /// <summary>
    /// Adds the HTTP/2 TLS output stage to an endpoint with its own options. Call it after <c>UseHttps</c>.
    /// </summary>
    /// <param name="listenOptions">The endpoint.</param>
    /// <param name="configure">Configures the stage; it starts from the defaults (<see cref="Http2TlsOutputStageMode.Http2Only"/>).</param>
    /// <returns>The endpoint.</returns>
    public static ListenOptions UseHttp2TlsOutputStage(this ListenOptions listenOptions, Action<Http2TlsOutputStageOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        ArgumentNullException.ThrowIfNull(configure);
        var stage = new Http2TlsOutputStageOptions();
        configure(stage);
        return listenOptions.UseHttp2TlsOutputStage(stage);
    }

    /// <summary>
    /// For an endpoint from configuration, inside your own <c>Configure(...).Endpoint(name, ...)</c> callback: applies
    /// TLS with the HTTPS options the loader assembled, then the HTTP/2 TLS output stage, so the stage sees plaintext.
    /// On an endpoint that uses SNI, Kestrel keeps its own TLS and the stage goes behind it before binding (needs
    /// <c>AddFastFiles()</c>, else the endpoint is named in the startup warning). Does nothing for HTTP endpoints, or when the mode is
    /// <see cref="Http2TlsOutputStageMode.Disabled"/>. Call it last in the callback: TLS settings are read when the endpoint starts.
    /// </summary>
    /// <param name="endpoint">The endpoint being configured.</param>
    /// <param name="configure">Configures the stage; it starts from the defaults (<see cref="Http2TlsOutputStageMode.Http2Only"/>).</param>
    /// <returns>The endpoint.</returns>
    public static EndpointConfiguration UseHttp2TlsOutputStage(this EndpointConfiguration endpoint, Action<Http2TlsOutputStageOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(endpoint);
        var stage = new Http2TlsOutputStageOptions();
        configure?.Invoke(stage);
        if (stage.Mode != Http2TlsOutputStageMode.Disabled)
        {
            EndpointWiring.UseStage(endpoint, stage);
        }

        return endpoint;
    }

    internal static ListenOptions UseHttp2TlsOutputStage(this ListenOptions listenOptions, Http2TlsOutputStageOptions stage)
    {
        if (stage.Mode == Http2TlsOutputStageMode.Disabled)
        {
            return listenOptions;
        }

        // Built when the endpoint binds, after all configuration: limits and logging are final by then.
        ConnectionPartsCoverage.TrackTlsSide(listenOptions);
        listenOptions.Use(next => CreateStage(next, stage, listenOptions));
        return listenOptions;
    }

    internal static ConnectionDelegate CreateStage(ConnectionDelegate next, Http2TlsOutputStageOptions stage, ListenOptions listenOptions)
    {
        if (stage.Mode == Http2TlsOutputStageMode.Disabled)
        {
            return next;
        }

        KestrelServerLimits limits = listenOptions.KestrelServerOptions?.Limits ?? new KestrelServerLimits();
        FastFilesMetrics metrics = FastFilesMetrics.For(listenOptions.ApplicationServices);
        return new Http2TlsOutputStageConnectionMiddleware(next, stage, limits, metrics, CreateLogger(listenOptions.ApplicationServices)).OnConnectionAsync;
    }

    internal static ILogger CreateLogger(IServiceProvider? services)
        => services?.GetService<ILoggerFactory>()?.CreateLogger(LoggerCategory) ?? NullLogger.Instance;
}
