using System.Runtime.CompilerServices;
using FastFiles.Connections;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>The HTTP/1.1 static lane on a Kestrel endpoint.</summary>
public static class StaticLaneListenOptionsExtensions
{
    // Roots are built once per options instance, so endpoints sharing options share one cache.
    private static readonly ConditionalWeakTable<StaticLaneOptions, StaticLaneRoot[]> LaneRoots = [];

    /// <summary>
    /// Adds the HTTP/1.1 static lane to an endpoint: GET and HEAD requests for files under the lane's roots are answered
    /// from prebuilt response bytes before Kestrel parses them; the first request the lane does not fully handle, and
    /// everything after it on that connection, goes to Kestrel untouched. Call it after <c>UseHttps</c> on TLS endpoints.
    /// HTTP/2 connections pass through. Requests the lane answers never reach the application's middleware (no
    /// authentication, authorization, rewrites, host filtering or endpoint routing): hand it only public roots.
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
        listenOptions.Use(next => CreateLane(next, lane, listenOptions));
        return listenOptions;
    }

    // Built when the endpoint binds, after all configuration. lane: null for the application's options.
    internal static ConnectionDelegate CreateLane(ConnectionDelegate next, StaticLaneOptions? lane, ListenOptions listenOptions)
    {
        if ((listenOptions.Protocols & HttpProtocols.Http1) == 0)
        {
            return next;
        }

        IServiceProvider services = listenOptions.ApplicationServices;
        lane ??= services.GetService<IOptions<StaticLaneOptions>>()?.Value ?? new StaticLaneOptions();
        ILogger logger = services.GetService<ILoggerFactory>()?.CreateLogger("FastFiles.Connections.StaticLane") ?? NullLogger.Instance;
        StaticLaneRoot[] roots = LaneRoots.GetValue(lane, options => BuildRoots(options, listenOptions));
        if (roots.Length == 0)
        {
            return next;
        }

        Log.LaneEnabled(logger, listenOptions.ToString() ?? string.Empty, roots.Length);
        KestrelServerLimits limits = listenOptions.KestrelServerOptions?.Limits ?? new KestrelServerLimits();
        return new StaticLaneConnectionMiddleware(next, roots, limits, FastFilesMetrics.For(services), logger).OnConnectionAsync;
    }

    private static StaticLaneRoot[] BuildRoots(StaticLaneOptions lane, ListenOptions listenOptions)
    {
        IServiceProvider services = listenOptions.ApplicationServices;
        FastFilesOptions fastFiles = services.GetService<IOptions<FastFilesOptions>>()?.Value ?? new FastFilesOptions();
        bool serverHeader = listenOptions.KestrelServerOptions?.AddServerHeader ?? true;
        ILogger cacheLogger = services.GetService<ILoggerFactory>()?.CreateLogger("FastFiles.Caching") ?? NullLogger.Instance;
        FastFilesMetrics metrics = FastFilesMetrics.For(services);
        var roots = new List<StaticLaneRoot>();
        foreach (StaticLaneRootOptions root in lane.Roots)
        {
            FastStaticFileOptions files = root.Files ?? services.GetService<IOptions<FastStaticFileOptions>>()?.Value ?? new FastStaticFileOptions();
            if (files.OnPrepareResponse is not null)
            {
                throw new InvalidOperationException("A static lane root cannot use OnPrepareResponse: lane responses never run application code.");
            }

            if (files.EnableContentHashETags)
            {
                throw new InvalidOperationException("A static lane root cannot use EnableContentHashETags (yet): its responses use modification-time ETags.");
            }

            string physical = root.PhysicalPath
                ?? (files.FileProvider as PhysicalFileProvider)?.Root
                ?? (files.FileProvider is null ? services.GetService<IWebHostEnvironment>()?.WebRootPath : null)
                ?? throw new InvalidOperationException("A static lane root needs a PhysicalPath (or a PhysicalFileProvider, or a web root).");
            roots.Add(new StaticLaneRoot(
                physical, files.RequestPath.Value ?? string.Empty, files.FollowSymlinksOutsideRoot, files.EnablePrecompressedFiles,
                files.CreatePolicy(), fastFiles, serverHeader, metrics, cacheLogger, files.CreateCompressionPolicy(fastFiles)));
        }

        StaticLaneRoot[] built = [.. roots];
        services.GetService<IHostApplicationLifetime>()?.ApplicationStopped.Register(() =>
        {
            foreach (StaticLaneRoot root in built)
            {
                root.Dispose();
            }
        });
        return built;
    }
}
