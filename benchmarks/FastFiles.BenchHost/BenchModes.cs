using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.BenchHost;

/// <summary>One file-serving configuration under test: the services it needs and the middleware it adds.</summary>
internal sealed record BenchMode(string Description, Action<IServiceCollection> ConfigureServices, Action<WebApplication, string> Configure)
{
    /// <summary>Connection-level setup: Kestrel options, and each endpoint after <c>UseHttps</c> (TLS) or as is (plaintext).</summary>
    public Action<KestrelServerOptions>? Kestrel { get; init; }

    public Action<ListenOptions>? Listen { get; init; }

    /// <summary>The static lane's root for the served folder, when the mode turns the lane on.</summary>
    public Func<string, StaticLaneRootOptions>? LaneRoot { get; init; }

    /// <summary>Run socket continuations inline on the epoll thread (diagnostic; unsafe for blocking apps).</summary>
    public bool InlineScheduling { get; init; }

    /// <summary>Host-level settings (the tuned profile), applied after the harness' own Kestrel setup.</summary>
    public Action<IWebHostBuilder>? Host { get; init; }
}

/// <summary>
/// The configurations the harness can compare. Adding one is one entry here (e.g. <c>fastfiles-nocache</c> or
/// <c>h2stage-on</c> once those options exist) plus its name in the harness' <c>--configs</c>.
/// </summary>
internal static class BenchModes
{
    // Files are served with the same content type by every server (nginx maps .bin the same way).
    private const string DefaultContentType = "application/octet-stream";

    public static IReadOnlyDictionary<string, BenchMode> All { get; } = new Dictionary<string, BenchMode>(StringComparer.Ordinal)
    {
        ["stock"] = new(
            "UseStaticFiles (Kestrel's SendFileFallback copy)",
            _ => { },
            (app, root) => app.UseStaticFiles(StockOptions(root))),

        ["sendfile"] = new(
            "UseFastSendFile + UseStaticFiles",
            services => services.AddFastFiles(),
            (app, root) =>
            {
                app.UseFastSendFile();
                app.UseStaticFiles(StockOptions(root));
            }),

        ["fastfiles"] = new(
            "UseFastFiles",
            services => services.AddFastFiles(),
            (app, root) => app.UseFastFiles(FastOptions(root))),

        // The buffer-size question: 4 KiB reads stay on Kestrel's block pool; the 64 KiB default leaves it for
        // ArrayPool on HTTP/1.1 (HTTP/2 is capped at 4 KiB either way).
        ["sendfile-buf4k"] = new(
            "UseFastSendFile + UseStaticFiles, 4 KiB reads",
            services => services.AddFastFiles(o => o.BufferSize = 4 * 1024),
            (app, root) =>
            {
                app.UseFastSendFile();
                app.UseStaticFiles(StockOptions(root));
            }),

        ["fastfiles-buf4k"] = new(
            "UseFastFiles, 4 KiB reads",
            services => services.AddFastFiles(o => o.BufferSize = 4 * 1024),
            (app, root) => app.UseFastFiles(FastOptions(root)))
        {
            // What a user adds for the connection-level parts, with defaults (the HTTP/2 TLS stage is opt-in).
            Kestrel = kestrel => kestrel.UseFastFilesConnections(o => o.EnableTlsRecordCoalescing = false),
            Listen = listen => listen.UseFastFilesConnections(),
        },

        ["fastfiles-stage"] = new(
            "UseFastFiles with the HTTP/2 TLS output stage on (HTTP/2 connections)",
            services => services.AddFastFiles(),
            (app, root) => app.UseFastFiles(FastOptions(root)))
        {
            Kestrel = kestrel => kestrel.UseFastFilesConnections(o =>
            {
                o.EnableTlsRecordCoalescing = false;
                o.EnableHttp2TlsOutputStage = true;
                o.Http2TlsOutputStage.Mode = Http2TlsOutputStageMode.Http2Only;
            }),
            Listen = listen => listen.UseFastFilesConnections(),
        },

        // The "stage off" twin of fastfiles-stage: the same connection-level setup with FastFiles' defaults, so the
        // pair differs only in the stage (plain "fastfiles" has no connection-level parts at all).
        ["fastfiles-nostage"] = new(
            "UseFastFiles with the request header cache, no TLS record coalescing, no HTTP/2 TLS stage (the baseline twin)",
            services => services.AddFastFiles(),
            (app, root) => app.UseFastFiles(FastOptions(root)))
        {
            Kestrel = kestrel => kestrel.UseFastFilesConnections(o => o.EnableTlsRecordCoalescing = false),
            Listen = listen => listen.UseFastFilesConnections(),
        },

        // Diagnostics for "where does the time go": the same 1 KiB body from memory with no file middleware at all
        // (the ceiling any middleware can reach on this engine), and FastFiles with socket continuations run inline
        // on the epoll thread instead of the thread pool (Kestrel's UnsafePreferInlineScheduling).
        ["kestrel-bytes"] = new(
            "A bare Kestrel endpoint writing an in-memory body of the requested file's size (no file middleware)",
            _ => { },
            (app, root) => app.Run(InMemoryBody(root))),

        ["fastfiles-inline"] = new(
            "UseFastFiles with Kestrel's UnsafePreferInlineScheduling",
            services => services.AddFastFiles(),
            (app, root) => app.UseFastFiles(FastOptions(root)))
        {
            Kestrel = kestrel => kestrel.UseFastFilesConnections(o => o.EnableTlsRecordCoalescing = false),
            Listen = listen => listen.UseFastFilesConnections(),
            InlineScheduling = true,
        },

        // Flow-control experiment: Kestrel's HTTP/2 receive windows (1 MiB connection, 768 KiB stream by default) and
        // frame size limit raised 16x. They govern what the client may send, so a GET-only load should not move.
        ["fastfiles-bigwindows"] = new(
            "fastfiles-nostage with Kestrel's HTTP/2 windows at 16 MiB / 12 MiB and a 256 KiB max frame size",
            services => services.AddFastFiles(),
            (app, root) => app.UseFastFiles(FastOptions(root)))
        {
            Kestrel = kestrel =>
            {
                kestrel.Limits.Http2.InitialConnectionWindowSize = 16 * 1024 * 1024;
                kestrel.Limits.Http2.InitialStreamWindowSize = 12 * 1024 * 1024;
                kestrel.Limits.Http2.MaxFrameSize = 256 * 1024;
                kestrel.UseFastFilesConnections(o => o.EnableTlsRecordCoalescing = false);
            },
            Listen = listen => listen.UseFastFilesConnections(),
        },

        // Today's defaults; the modes above keep record coalescing off so each differs from its twin in one part only.
        ["fastfiles-coalesce"] = Coalesce("UseFastFiles with the connection-level parts at their defaults (header cache and TLS record coalescing on, stage off)"),

        // Issue 11: fastfiles-coalesce plus the zero-copy send path on the plaintext endpoint (file bodies of 16 KiB and
        // more sent with sendfile(2); TLS and h2c responses are copied as before).
        ["zerocopy"] = new(
            "UseFastFiles with the connection-level defaults and the zero-copy send path (sendfile) on plaintext HTTP/1.1",
            services => services.AddFastFiles(),
            (app, root) => app.UseFastFiles(FastOptions(root)))
        {
            Kestrel = kestrel => kestrel.UseFastFilesConnections(),
            Listen = listen =>
            {
                listen.UseZeroCopySendFile();
                listen.UseFastFilesConnections();
            },
        },

        // The zero-copy send path with socket continuations on the event thread (UseFastFilesInlineSockets): the
        // runtime's wait-and-sendfile completions run there instead of hopping to the thread pool.
        ["zerocopy-inline"] = new(
            "zerocopy with UseFastFilesInlineSockets",
            services => services.AddFastFiles(),
            (app, root) => app.UseFastFiles(FastOptions(root)))
        {
            Host = web => web.UseFastFilesInlineSockets(),
            Kestrel = kestrel => kestrel.UseFastFilesConnections(),
            Listen = listen =>
            {
                listen.UseZeroCopySendFile();
                listen.UseFastFilesConnections();
            },
        },

        // Dynamic compression (issue 13) on top of today's defaults (the fastfiles-coalesce twin): compressible types get
        // brotli and gzip variants made once per file version; .bin files (application/octet-stream) are not compressible.
        ["fastfiles-compress"] = new(
            "fastfiles-coalesce with EnableDynamicCompression",
            services => services.AddFastFiles(),
            (app, root) => app.UseFastFiles(CompressingOptions(root)))
        {
            Kestrel = kestrel => kestrel.UseFastFilesConnections(),
            Listen = listen => listen.UseFastFilesConnections(),
        },

        // The static lane answering compressed variants itself (fastfiles-lane with EnableDynamicCompression).
        ["fastfiles-lane-compress"] = Lane("fastfiles-lane with EnableDynamicCompression", CompressingOptions),

        // Issue 13 through the file results: every path answered by a minimal-API catch-all returning
        // FastResults.File(root, path, enableDynamicCompression: true), connection parts as fastfiles-compress.
        ["results-compress"] = Coalesce("FastResults.File with enableDynamicCompression for every path (a catch-all endpoint), connection parts at their defaults") with
        {
            Configure = (app, root) => app.MapGet("/{**path}", (string path) => FastResults.File(root, path, enableDynamicCompression: true)),
        },

        // The static lane over a root with content-hash ETags (the fastfiles-lane twin): its prebuilt responses carry
        // the hash tags.
        ["fastfiles-lane-hash"] = Lane("fastfiles-lane with EnableContentHashETags", ContentHashOptions),

        // The open-file cache's twin: fastfiles-coalesce (today's defaults) with large files opened and closed per request.
        ["fastfiles-noopenfiles"] = new(
            "fastfiles-coalesce with the open-file cache off (MaxOpenFiles = 0)",
            services => services.AddFastFiles(o => o.MaxOpenFiles = 0),
            (app, root) => app.UseFastFiles(FastOptions(root)))
        {
            Kestrel = kestrel => kestrel.UseFastFilesConnections(),
            Listen = listen => listen.UseFastFilesConnections(),
        },

        // The HTTP/1.1 static lane on top of today's defaults (the fastfiles-coalesce twin): cached GET/HEAD answered
        // before Kestrel parses them, on the HTTP/1.1 and TLS endpoints (the h2c endpoint has no HTTP/1.1, so no lane).
        ["fastfiles-lane"] = Lane("fastfiles-coalesce with the HTTP/1.1 static lane serving the root"),

        // The lane with the zero-copy send path outermost: its flushes go straight to the socket (no send-loop hop).
        ["fastfiles-lane-zerocopy"] = Lane("fastfiles-lane with the zero-copy send path on the plaintext endpoint") with
        {
            Listen = listen =>
            {
                listen.UseZeroCopySendFile();
                listen.UseFastFilesConnections();
            },
        },

        // The lane with every socket continuation on the epoll thread (UseFastFilesInlineSockets: Kestrel's
        // UnsafePreferInlineScheduling, no zero-byte read before each receive, the runtime's inline socket completions).
        // Safe only where nothing on the connection blocks: see README "Inline sockets".
        ["fastfiles-lane-inline"] = Lane("fastfiles-lane with UseFastFilesInlineSockets") with
        {
            Host = web => web.UseFastFilesInlineSockets(),
        },

        ["fastfiles-lane-inline-zerocopy"] = Lane("fastfiles-lane-inline with the zero-copy send path on the plaintext endpoint") with
        {
            Host = web => web.UseFastFilesInlineSockets(),
            Listen = listen =>
            {
                listen.UseZeroCopySendFile();
                listen.UseFastFilesConnections();
            },
        },

        ["fastfiles-nocache"] = new(
            "UseFastFiles with the file cache off",
            services => services.AddFastFiles(o => o.EnableFileCache = false),
            (app, root) => app.UseFastFiles(FastOptions(root))),

        ["fastfiles-nocache-hash"] = new(
            "UseFastFiles with the file cache off and EnableContentHashETags",
            services => services.AddFastFiles(o => o.EnableFileCache = false),
            (app, root) => app.UseFastFiles(ContentHashOptions(root))),

        // The tuned host profile against fastfiles-coalesce (today's defaults), with a template app's logging (the
        // profile's logging setting only shows where a logging provider is registered).
        ["fastfiles-tuned"] = Coalesce("UseFastFiles + connection parts at their defaults + UseFastFilesTunedProfile") with
        {
            Host = web =>
            {
                web.ConfigureLogging(TemplateLogging);
                web.UseFastFilesTunedProfile();
            },
        },

        // One knob at a time on top of fastfiles-coalesce (today's defaults), so each knob's effect per workload shows in
        // one interleaved run. The harness pins the server to one CPU, where Kestrel's default IOQueueCount is 1.
        ["knob-inline"] = Knob("fastfiles-coalesce + UnsafePreferInlineScheduling", web => web.UseSockets(s => s.UnsafePreferInlineScheduling = true)),
        ["knob-nowait"] = Knob("fastfiles-coalesce + WaitForDataBeforeAllocatingBuffer = false", web => web.UseSockets(s => s.WaitForDataBeforeAllocatingBuffer = false)),
        ["knob-ioq0"] = Knob("fastfiles-coalesce + IOQueueCount = 0 (socket work straight to the thread pool)", web => web.UseSockets(s => s.IOQueueCount = 0)),
        ["knob-ioq2"] = Knob("fastfiles-coalesce + IOQueueCount = 2", web => web.UseSockets(s => s.IOQueueCount = 2)),
        ["knob-inlinecompletions"] = Knob("fastfiles-coalesce with DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS=1 (set by the harness)", _ => { }),
        ["knob-serverheader"] = Knob("fastfiles-coalesce with Kestrel's Server header back on (the harness turns it off everywhere else)",
            web => web.ConfigureKestrel(k => k.AddServerHeader = true)),
        // A template app's logging (console provider, Microsoft.AspNetCore at Warning), with and without hosting's
        // per-request diagnostics logger turned off.
        ["knob-logging"] = Knob("fastfiles-coalesce + console logging filtered as a template app's appsettings", web => web.ConfigureLogging(TemplateLogging)),
        ["knob-logging-nodiag"] = Knob("knob-logging + Microsoft.AspNetCore.Hosting.Diagnostics at None", web => web.ConfigureLogging(logging =>
        {
            TemplateLogging(logging);
            logging.AddFilter("Microsoft.AspNetCore.Hosting.Diagnostics", LogLevel.None);
        })),

        // MapStaticAssets (how .NET 9/10 templates serve wwwroot) over a publish-form manifest written at start-up for
        // the served folder, plain and with FastFiles' send path under its endpoints.
        ["staticassets"] = new(
            "MapStaticAssets",
            _ => { },
            (app, root) => app.MapStaticAssets(StaticAssetsManifest(root))),

        ["staticassets-fast"] = new(
            "MapStaticAssets().WithFastFiles()",
            services => services.AddFastFiles(),
            (app, root) => app.MapStaticAssets(StaticAssetsManifest(root)).WithFastFiles()),
    };

    private static BenchMode Coalesce(string description) => new(
        description,
        services => services.AddFastFiles(),
        (app, root) => app.UseFastFiles(FastOptions(root)))
    {
        Kestrel = kestrel => kestrel.UseFastFilesConnections(),
        Listen = listen => listen.UseFastFilesConnections(),
    };

    // The lane and UseFastFiles over the same root with the same options (FastOptions unless given).
    private static BenchMode Lane(string description, Func<string, FastStaticFileOptions>? options = null)
    {
        Func<string, FastStaticFileOptions> files = options ?? FastOptions;
        return new(
            description,
            services => services.AddFastFiles(),
            (app, root) => app.UseFastFiles(files(root)))
        {
            Listen = listen => listen.UseFastFilesConnections(),
            LaneRoot = root => new StaticLaneRootOptions { PhysicalPath = root, Files = files(root) },
        };
    }

    private static BenchMode Knob(string description, Action<IWebHostBuilder> knob) => Coalesce(description) with { Host = knob };

    private static void TemplateLogging(ILoggingBuilder logging)
    {
        logging.AddConsole();
        logging.AddFilter(level => level >= LogLevel.Information);
        logging.AddFilter("Microsoft.AspNetCore", LogLevel.Warning);
    }

    // No gzip variants: the harness' files are random bytes, and h2load asks for gzip.
    private static string StaticAssetsManifest(string root)
    {
        string path = Path.Combine(Path.GetTempPath(), $"fastfiles-bench-{Environment.ProcessId}.staticwebassets.endpoints.json");
        FastFiles.Testing.StaticWebAssetsManifest.Write(root, path, compress: false);

        // One per run of the host: gone with the process (the harness stops hosts with SIGTERM, which runs this).
        AppDomain.CurrentDomain.ProcessExit += (_, _) => File.Delete(path);
        return path;
    }

    // Bodies are read once at start-up, so the endpoint measures Kestrel alone; unknown paths are 404.
    private static RequestDelegate InMemoryBody(string root)
    {
        var bodies = new Dictionary<string, byte[]>(StringComparer.Ordinal);
        foreach (string file in Directory.EnumerateFiles(root, "*", SearchOption.AllDirectories))
        {
            if (new FileInfo(file).Length <= 1024 * 1024)
            {
                bodies["/" + Path.GetRelativePath(root, file).Replace(Path.DirectorySeparatorChar, '/')] = File.ReadAllBytes(file);
            }
        }

        return context =>
        {
            if (!bodies.TryGetValue(context.Request.Path.Value ?? string.Empty, out byte[]? body))
            {
                context.Response.StatusCode = StatusCodes.Status404NotFound;
                return Task.CompletedTask;
            }

            context.Response.ContentType = DefaultContentType;
            ReadOnlyMemory<byte> bytes = body;
            // Only the "bytes=first-last" form the harness' correctness check sends.
            string range = context.Request.Headers.Range.ToString();
            if (range.StartsWith("bytes=", StringComparison.Ordinal) && range[6..].Split('-') is [var first, var last]
                && long.TryParse(first, out long from) && long.TryParse(last, out long to) && from <= to && to < body.Length)
            {
                bytes = bytes[(int)from..((int)to + 1)];
                context.Response.StatusCode = StatusCodes.Status206PartialContent;
                context.Response.Headers.ContentRange = $"bytes {from}-{to}/{body.Length}";
            }

            context.Response.ContentLength = bytes.Length;
            return context.Response.Body.WriteAsync(bytes).AsTask();
        };
    }

    private static FastStaticFileOptions FastOptions(string root) => new()
    {
        FileProvider = new PhysicalFileProvider(root),
        ServeUnknownFileTypes = true,
        DefaultContentType = DefaultContentType,
    };

    private static FastStaticFileOptions CompressingOptions(string root)
    {
        FastStaticFileOptions options = FastOptions(root);
        options.EnableDynamicCompression = true;
        return options;
    }

    private static FastStaticFileOptions ContentHashOptions(string root)
    {
        FastStaticFileOptions options = FastOptions(root);
        options.EnableContentHashETags = true;
        return options;
    }

    private static StaticFileOptions StockOptions(string root) => new()
    {
        FileProvider = new PhysicalFileProvider(root),
        ServeUnknownFileTypes = true,
        DefaultContentType = DefaultContentType,
    };
}
