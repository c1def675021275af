using FastFiles.Caching;
using FastFiles.Connections;
using FastFiles.Diagnostics;
using FastFiles.Responses;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace FastFiles.Hosting;

/// <summary>Builds the static lane for an endpoint when Kestrel binds it: its roots (shared per options instance) and its clock.</summary>
internal static class StaticLaneWiring
{
    // Built when the endpoint binds, after all configuration. lane: null for the application's options.
    internal static ConnectionDelegate CreateLane(ConnectionDelegate next, StaticLaneOptions? lane, ListenOptions listenOptions)
    {
        // Whatever it decides below (HTTP/2 only, no roots, off for Alt-Svc, which is logged), the lane reached this endpoint.
        ConnectionPartsCoverage.PlaintextCovered(listenOptions, ConnectionPartsCoverage.PlaintextParts.Lane);
        if ((listenOptions.Protocols & HttpProtocols.Http1) == 0)
        {
            return next;
        }

        IServiceProvider services = listenOptions.ApplicationServices;
        StaticLaneRoots? shared = services.GetService<IOptions<StaticLaneRoots>>()?.Value;
        // Without AddFastFiles the container's options are not bound from FastFiles:StaticLane: bind them here, once per
        // application, so every endpoint with the application's options still shares one set of roots.
        lane ??= shared?.Application(services) ?? FastFilesOptionsSource.Resolve<StaticLaneOptions>(services, FastFilesConfiguration.StaticLaneSectionName, FastFilesConfiguration.Bind);
        ILogger logger = services.GetService<ILoggerFactory>()?.CreateLogger("FastFiles.Connections.StaticLane") ?? NullLogger.Instance;
        if (AnnouncesHttp3(listenOptions))
        {
            Log.LaneOffForAltSvc(logger, listenOptions.ToString() ?? string.Empty);
            return next;
        }

        // Roots are built once per options instance, so endpoints sharing the application's options share one cache.
        StaticLaneRoot[] roots = shared?.GetOrBuild(lane, options => BuildRoots(options, listenOptions))
            ?? BuildRoots(lane, listenOptions);
        if (roots.Length == 0)
        {
            return next;
        }

        Log.LaneEnabled(logger, listenOptions.ToString() ?? string.Empty, roots.Length);
        KestrelServerLimits limits = listenOptions.KestrelServerOptions?.Limits ?? new KestrelServerLimits();
        var heartbeat = new StaticLaneHeartbeat();
        FastFilesResources.Hold(services, heartbeat);
        bool serverHeader = listenOptions.KestrelServerOptions?.AddServerHeader ?? true;
        return new StaticLaneConnectionMiddleware(
            next, roots, heartbeat, limits, serverHeader, FastFilesMetrics.For(services), logger, StaticLaneHostFilter.For(services)).OnConnectionAsync;
    }

    // Kestrel adds Alt-Svc (h3) to the HTTP/1.1 and HTTP/2 responses of an endpoint that also listens for HTTP/3, when
    // QUIC is there and DisableAltSvcHeader is off (RFC 7838). The lane's prebuilt responses do not, and a client that
    // only ever met the lane would never learn of HTTP/3: such an endpoint keeps Kestrel's responses.
    internal static bool AnnouncesHttp3(ListenOptions listenOptions)
        => (listenOptions.Protocols & HttpProtocols.Http3) != 0
            && !listenOptions.DisableAltSvcHeader
            && (OperatingSystem.IsLinux() || OperatingSystem.IsWindows() || OperatingSystem.IsMacOS())
            && System.Net.Quic.QuicListener.IsSupported;

    private static StaticLaneRoot[] BuildRoots(StaticLaneOptions lane, ListenOptions listenOptions)
    {
        IServiceProvider services = listenOptions.ApplicationServices;
        // The options UseFastFiles() uses: the container's with AddFastFiles, else the FastFiles sections bound here and
        // validated as UseFastFiles() validates them, so an app with only the lane stops at start on an invalid value too.
        FastFilesOptions fastFiles = FastFilesConfiguration.ValidatedFastFilesOptions(services);
        FastStaticFileOptions? appFiles = null;
        IWebHostEnvironment? environment = services.GetService<IWebHostEnvironment>();
        bool serverHeader = listenOptions.KestrelServerOptions?.AddServerHeader ?? true;
        ILogger cacheLogger = services.GetService<ILoggerFactory>()?.CreateLogger("FastFiles.Caching") ?? NullLogger.Instance;
        FastFilesMetrics metrics = FastFilesMetrics.For(services);
        var roots = new List<StaticLaneRoot>();
        try
        {
            int index = 0;
            foreach (StaticLaneRootOptions root in lane.Roots)
            {
                // Configuration binds an empty value as "", which Path.Combine would turn into the content root itself
                // (appsettings.json, the app's assemblies) served to anyone: refused, never read as the default.
                if (root.PhysicalPath is { } blank && string.IsNullOrWhiteSpace(blank))
                {
                    throw new Microsoft.Extensions.Options.OptionsValidationException(
                        Microsoft.Extensions.Options.Options.DefaultName, typeof(StaticLaneRootOptions),
                        [$"{FastFilesConfiguration.StaticLaneSectionName}:Roots:{index}:PhysicalPath is empty: name a folder, or leave it out for the web root."]);
                }

                index++;
                FastStaticFileOptions files = root.Files ?? (appFiles ??= FastFilesConfiguration.StaticFileOptions(services));
                if (files.OnPrepareResponse is not null || files.OnPrepareResponseAsync is not null)
                {
                    throw new InvalidOperationException("A static lane root cannot use OnPrepareResponse or OnPrepareResponseAsync: lane responses never run application code.");
                }

                // A relative path is under the content root, as ASP.NET Core resolves the web root, not under whatever
                // directory the process was started in.
                string physical = (root.PhysicalPath is { } given && environment is not null ? Path.Combine(environment.ContentRootPath, given) : root.PhysicalPath)
                    ?? (files.FileProvider as PhysicalFileProvider)?.Root
                    ?? (files.FileProvider is null ? environment?.WebRootPath : null)
                    ?? throw new InvalidOperationException("A static lane root needs a PhysicalPath (or a PhysicalFileProvider, or a web root).");
                roots.Add(new StaticLaneRoot(
                    physical, files.RequestPath.Value ?? string.Empty, files.FollowSymlinksOutsideRoot, files.EnablePrecompressedFiles,
                    files.CreatePolicy(), fastFiles, serverHeader, metrics, cacheLogger, files.CreateCompressionPolicy(fastFiles),
                    files.DefaultFileNames.Count > 0 ? files.DefaultFileNames[0] : null, files.EnableContentHashETags, services, files));
            }
        }
        catch
        {
            // The endpoint fails to bind and the host to start, so nothing stops the roots already built: give back
            // their caches (watchers and kept descriptors), shared ones included.
            foreach (StaticLaneRoot built in roots)
            {
                built.Dispose();
            }

            throw;
        }

        StaticLaneRoot[] all = [.. roots];
        foreach (StaticLaneRoot root in all)
        {
            FastFilesResources.Hold(services, root);
        }

        return all;
    }
}

/// <summary>
/// The lane roots built for each <see cref="StaticLaneOptions"/> instance of one application, carried by its container
/// (the host registers <c>IOptions&lt;&gt;</c> for every type) rather than by a registry of ours.
/// </summary>
internal sealed class StaticLaneRoots
{
    private readonly Dictionary<StaticLaneOptions, StaticLaneRoot[]> _built = new(ReferenceEqualityComparer.Instance);
    private StaticLaneOptions? _application;

    /// <summary>The application's lane options: the container's with <c>AddFastFiles</c>, else bound here from <c>FastFiles:StaticLane</c>, once.</summary>
    public StaticLaneOptions Application(IServiceProvider services)
    {
        lock (_built)
        {
            return _application ??= FastFilesOptionsSource.Resolve<StaticLaneOptions>(services, FastFilesConfiguration.StaticLaneSectionName, FastFilesConfiguration.Bind);
        }
    }

    public StaticLaneRoot[] GetOrBuild(StaticLaneOptions lane, Func<StaticLaneOptions, StaticLaneRoot[]> build)
    {
        lock (_built)
        {
            if (!_built.TryGetValue(lane, out StaticLaneRoot[]? roots))
            {
                roots = build(lane);
                _built.Add(lane, roots);
            }

            return roots;
        }
    }
}
