using System.Runtime.CompilerServices;
using FastFiles.Connections;
using FastFiles.Diagnostics;
using FastFiles.Hosting;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>Adds FastFiles' connection-level parts to Kestrel.</summary>
public static class FastFilesKestrelExtensions
{
    private const string LoggerCategory = "FastFiles.Connections.Http2TlsOutputStage";

    // Options registered by UseFastFilesConnections, found again by the parameterless UseHttp2TlsOutputStage on code endpoints.
    private static readonly ConditionalWeakTable<KestrelServerOptions, FastFilesKestrelOptions> Registered = [];

    internal static FastFilesKestrelOptions? RegisteredOptions(KestrelServerOptions options)
        => Registered.TryGetValue(options, out FastFilesKestrelOptions? found) ? found : null;

    /// <summary>
    /// Applies FastFiles' connection-level parts to Kestrel. TLS record coalescing (on by default) and the HTTP/2 TLS
    /// output stage (off by default) are put on the plaintext side of TLS of every HTTPS endpoint read from
    /// configuration (<c>Kestrel:Endpoints</c>): for each such endpoint FastFiles registers a
    /// <c>ConfigurationLoader.Endpoint(name, ...)</c> callback that calls <c>UseHttps</c> with the HTTPS options the loader
    /// assembled (certificate included) and then adds them; the loader sees the endpoint is already TLS and does not add
    /// TLS again. Code-configured endpoints get the stage with
    /// <c>listenOptions.UseHttps(...).UseHttp2TlsOutputStage()</c>, which then uses the options given here.
    /// </summary>
    /// <remarks>
    /// Endpoints bound from URLs (<c>--urls</c>, <c>ASPNETCORE_URLS</c>, <c>launchSettings.json</c>, <c>app.Urls</c>) get the
    /// parts too when the app calls <c>AddFastFiles()</c>: a <c>ConfigureEndpointDefaults</c> callback adds TLS to an HTTPS
    /// one first, as Kestrel would, then the parts; an app's own <c>ConfigureEndpointDefaults</c> callback, set before or after
    /// this call, still runs (first). Options are bound
    /// from the <c>FastFiles:Kestrel</c> configuration section before <paramref name="configure"/> runs. Every HTTPS
    /// endpoint the TLS-side parts do not reach is named in a startup warning.
    /// Kestrel keeps one callback per configured endpoint name, so an app that registers its own
    /// <c>ConfigurationLoader.Endpoint(name, ...)</c> after this call replaces FastFiles' callback for that name (and one
    /// registered before this call is replaced by FastFiles'); such a callback should end with
    /// <see cref="UseHttp2TlsOutputStage(EndpointConfiguration, Action{Http2TlsOutputStageOptions}?)"/>. Calling
    /// <c>KestrelServerOptions.Configure(...)</c> after this call creates a new loader without FastFiles' callbacks.
    /// Endpoints configured with SNI are left alone and named in the startup warning (Kestrel's SNI selection is internal), and endpoints that appear in configuration
    /// only after this call (configuration reload) are not staged.
    /// </remarks>
    /// <param name="options">Kestrel's options.</param>
    /// <param name="configure">Configures FastFiles' Kestrel options; by default the stage runs in <see cref="Http2TlsOutputStageMode.Http2Only"/> mode.</param>
    /// <returns>Kestrel's options.</returns>
    public static KestrelServerOptions UseFastFilesConnections(this KestrelServerOptions options, Action<FastFilesKestrelOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        var fastFiles = new FastFilesKestrelOptions();
        // Configuration first, then code, as for FastFiles' other options.
        options.ApplicationServices?.GetService<IConfiguration>()?.GetSection(FastFilesConfiguration.KestrelSectionName).Bind(fastFiles);
        configure?.Invoke(fastFiles);
        Registered.AddOrUpdate(options, fastFiles);

        Http2TlsOutputStageOptions stage = fastFiles.Http2TlsOutputStage;
        bool stageOn = fastFiles.EnableHttp2TlsOutputStage && stage.Mode != Http2TlsOutputStageMode.Disabled;
        string parts = string.Join(" and ", new[] { fastFiles.EnableTlsRecordCoalescing ? "TLS record coalescing" : null, stageOn ? "the HTTP/2 TLS output stage" : null }.OfType<string>());
        if (options.ApplicationServices is not null)
        {
            ConnectionPartsCoverage.Register(options, parts, (listen, https) =>
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

                if (https && stageOn)
                {
                    listen.UseHttp2TlsOutputStage(stage);
                }
            });
        }

        if (options.ConfigurationLoader is not { } loader)
        {
            return options;
        }

        foreach (IConfigurationSection endpoint in loader.Configuration.GetSection("Endpoints").GetChildren())
        {
            loader.Endpoint(endpoint.Key, e =>
            {
                // Outermost: nothing may wrap the connection between the socket and the send path.
                if (fastFiles.EnableZeroCopySendFile && !e.IsHttps)
                {
                    e.ListenOptions.UseZeroCopySendFile();
                }

                if (fastFiles.EnableRequestHeaderCache)
                {
                    e.ListenOptions.UseRequestHeaderCache();
                }

                bool staged = fastFiles.EnableHttp2TlsOutputStage && stage.Mode != Http2TlsOutputStageMode.Disabled;
                bool tlsApplied = false;
                if (staged || fastFiles.EnableTlsRecordCoalescing || (fastFiles.EnableStaticLane && e.IsHttps))
                {
                    tlsApplied = e.UseTlsParts(fastFiles.EnableTlsRecordCoalescing, staged ? stage : null);
                }

                // The lane must see plaintext: on an HTTPS endpoint FastFiles could not take TLS over (SNI), it stays off.
                if (fastFiles.EnableStaticLane && (!e.IsHttps || tlsApplied))
                {
                    e.ListenOptions.UseStaticLane(lane: null);
                }
            });
        }

        return options;
    }

    /// <summary>
    /// FastFiles' connection-level parts for a code-configured endpoint: the per-connection request header cache, and
    /// when this follows <c>UseHttps</c>, TLS record coalescing (<see cref="FastFilesKestrelOptions.EnableTlsRecordCoalescing"/>,
    /// on by default) and the HTTP/2 TLS output stage (<see cref="FastFilesKestrelOptions.EnableHttp2TlsOutputStage"/>,
    /// off by default). Plaintext connections pass through both.
    /// Uses the options given to <see cref="UseFastFilesConnections(KestrelServerOptions, Action{FastFilesKestrelOptions}?)"/> on
    /// the same server if any, else the defaults.
    /// </summary>
    /// <param name="listenOptions">The endpoint; call after <c>UseHttps</c> for TLS endpoints.</param>
    /// <returns>The endpoint.</returns>
    public static ListenOptions UseFastFilesConnections(this ListenOptions listenOptions)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        TrackTlsSide(listenOptions);
        // Resolved when the endpoint is built, so KestrelServerOptions.UseFastFilesConnections may run before or after this call.
        listenOptions.Use(next =>
        {
            FastFilesKestrelOptions? registered = listenOptions.KestrelServerOptions is { } server
                && Registered.TryGetValue(server, out FastFilesKestrelOptions? found) ? found : null;
            ConnectionDelegate pipeline = next;
            if (registered is { EnableHttp2TlsOutputStage: true })
            {
                pipeline = CreateStage(pipeline, registered.Http2TlsOutputStage, listenOptions);
            }

            if (registered?.EnableRequestHeaderCache ?? true)
            {
                pipeline = new RequestHeaderCacheConnectionMiddleware(pipeline).OnConnectionAsync;
            }

            // Before the header cache: a connection the lane hands off then gets it as usual.
            if (registered is { EnableStaticLane: true })
            {
                pipeline = StaticLaneListenOptionsExtensions.CreateLane(pipeline, lane: null, listenOptions);
            }

            // Outermost, right after TLS: it also coalesces what the stage drains.
            if (registered?.EnableTlsRecordCoalescing ?? true)
            {
                pipeline = new TlsRecordCoalescingConnectionMiddleware(pipeline, FastFilesMetrics.For(listenOptions.ApplicationServices)).OnConnectionAsync;
            }

            return pipeline;
        });
        return listenOptions;
    }

    /// <summary>
    /// Adds the HTTP/2 TLS output stage to an endpoint. Call it after <c>UseHttps</c> so it sees plaintext; on an
    /// endpoint without TLS it passes every connection through. Uses the options given to
    /// <see cref="UseFastFilesConnections(KestrelServerOptions, Action{FastFilesKestrelOptions}?)"/> on the same server if any,
    /// else the defaults (<see cref="Http2TlsOutputStageMode.Http2Only"/>, bounded by Kestrel's <c>MaxResponseBufferSize</c>).
    /// </summary>
    /// <param name="listenOptions">The endpoint.</param>
    /// <returns>The endpoint.</returns>
    public static ListenOptions UseHttp2TlsOutputStage(this ListenOptions listenOptions)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        TrackTlsSide(listenOptions);
        // Resolved when the endpoint is built, so UseFastFilesConnections may run before or after this call.
        listenOptions.Use(next =>
        {
            Http2TlsOutputStageOptions stage = listenOptions.KestrelServerOptions is { } server && Registered.TryGetValue(server, out FastFilesKestrelOptions? registered)
                ? registered.Http2TlsOutputStage
                : new Http2TlsOutputStageOptions();
            return CreateStage(next, stage, listenOptions);
        });
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
    /// Does nothing for HTTP endpoints, for endpoints that use SNI (logged), or when the mode is
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
        return endpoint.UseHttp2TlsOutputStage(stage);
    }

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
        TrackTlsSide(listenOptions);
        listenOptions.Use(next => new TlsRecordCoalescingConnectionMiddleware(next, FastFilesMetrics.For(listenOptions.ApplicationServices)).OnConnectionAsync);
        return listenOptions;
    }

    internal static EndpointConfiguration UseHttp2TlsOutputStage(this EndpointConfiguration endpoint, Http2TlsOutputStageOptions stage)
    {
        if (stage.Mode == Http2TlsOutputStageMode.Disabled)
        {
            return endpoint;
        }

        endpoint.UseTlsParts(coalesceRecords: false, stage);
        return endpoint;
    }

    // For an endpoint from configuration: TLS applied here with the options the loader assembled, then record coalescing
    // and/or the stage on its plaintext side.
    // True when TLS is now applied here (so later connection middleware sees plaintext).
    private static bool UseTlsParts(this EndpointConfiguration endpoint, bool coalesceRecords, Http2TlsOutputStageOptions? stage)
    {
        if (!endpoint.IsHttps)
        {
            return false;
        }

        ILogger logger = CreateLogger(endpoint.ListenOptions);
        string name = endpoint.ConfigSection.Key;
        if (endpoint.ConfigSection.GetSection("Sni").GetChildren().Any())
        {
            // Kestrel's SNI selector (per-host certificates, protocols and client-certificate modes) is internal; taking
            // TLS over here would silently drop it. The startup check names the endpoint (warning 6002).
            ConnectionPartsCoverage.NotCovered(endpoint.ListenOptions, $"it uses SNI (Kestrel:Endpoints:{name}:Sni), and Kestrel's per-host certificate selection cannot be kept when FastFiles adds TLS itself. Bind it in code instead: listenOptions.UseHttps(new TlsHandshakeCallbackOptions {{ OnConnection = ... }}) or UseHttps(https => https.ServerCertificateSelector = ...), followed by .UseFastFilesConnections().");
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

    internal static ListenOptions UseHttp2TlsOutputStage(this ListenOptions listenOptions, Http2TlsOutputStageOptions stage)
    {
        if (stage.Mode == Http2TlsOutputStageMode.Disabled)
        {
            return listenOptions;
        }

        // Built when the endpoint binds, after all configuration: limits and logging are final by then.
        TrackTlsSide(listenOptions);
        listenOptions.Use(next => CreateStage(next, stage, listenOptions));
        return listenOptions;
    }

    // TLS-side parts see plaintext only when added after UseHttps; one added before it would see ciphertext and pass
    // every connection through, which the startup check then names.
    private static void TrackTlsSide(ListenOptions listenOptions)
    {
        if (IsTls(listenOptions))
        {
            ConnectionPartsCoverage.Covered(listenOptions);
            return;
        }

        listenOptions.Use(next =>
        {
            if (IsTls(listenOptions))
            {
                ConnectionPartsCoverage.NotCovered(
                    listenOptions,
                    "FastFiles' connection parts were added before UseHttps(), so they would see encrypted bytes. Call listenOptions.UseHttps(...) first, then .UseFastFilesConnections().");
            }

            return next;
        });
    }

    // ListenOptions shows its scheme ("https://...") once UseHttps has run; Kestrel keeps the flag itself internal.
    private static bool IsTls(ListenOptions listenOptions) => ConnectionPartsCoverage.NameOf(listenOptions).StartsWith("https://", StringComparison.OrdinalIgnoreCase);

    private static ConnectionDelegate CreateStage(ConnectionDelegate next, Http2TlsOutputStageOptions stage, ListenOptions listenOptions)
    {
        if (stage.Mode == Http2TlsOutputStageMode.Disabled)
        {
            return next;
        }

        KestrelServerLimits limits = listenOptions.KestrelServerOptions?.Limits ?? new KestrelServerLimits();
        FastFilesMetrics metrics = FastFilesMetrics.For(listenOptions.ApplicationServices);
        return new Http2TlsOutputStageConnectionMiddleware(next, stage, limits, metrics, CreateLogger(listenOptions)).OnConnectionAsync;
    }

    private static ILogger CreateLogger(ListenOptions listenOptions)
        => listenOptions.ApplicationServices?.GetService<ILoggerFactory>()?.CreateLogger(LoggerCategory) ?? NullLogger.Instance;
}
