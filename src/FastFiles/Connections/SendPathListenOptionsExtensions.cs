using FastFiles.Diagnostics;
using FastFiles.Connections;
using FastFiles.Hosting;
using FastFiles.Responses;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>FastFiles' zero-copy send path for one Kestrel endpoint.</summary>
public static class SendPathListenOptionsExtensions
{
    private const string LoggerCategory = "FastFiles.Connections.SendPath";

    /// <summary>
    /// Sends this endpoint's HTTP/1.x output to the socket with FastFiles' own writer, so file bodies from
    /// <c>UseFastFiles</c>, <c>UseFastSendFile</c> (stock <c>UseStaticFiles</c>, <c>Results.File</c>) and
    /// <c>FastResults</c> go out with sendfile(2), straight from the file to the socket. Call it first on a plaintext
    /// endpoint (before anything else that wraps the connection). Responses it cannot send that way (TLS, HTTP/2,
    /// chunked, a replaced response body) are copied as before; connections without a socket, and platforms other than
    /// 64-bit Linux, pass through. Uses the options given to <c>KestrelServerOptions.UseFastFilesConnections</c> on the same server
    /// if any, else the defaults.
    /// </summary>
    /// <param name="listenOptions">The endpoint.</param>
    /// <param name="configure">Configures the send path; starts from the server's FastFiles options or the defaults.</param>
    /// <returns>The endpoint.</returns>
    public static ListenOptions UseZeroCopySendFile(this ListenOptions listenOptions, Action<ZeroCopySendFileOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(listenOptions);
        // Resolved when the endpoint is built, so KestrelServerOptions.UseFastFilesConnections may run before or after this call.
        listenOptions.Use(next =>
        {
            ConnectionPartsCoverage.PlaintextCovered(listenOptions, ConnectionPartsCoverage.PlaintextParts.SendPath);
            ZeroCopySendFileOptions registered = FastFilesKestrelState.OptionsFor(listenOptions).ZeroCopySendFile;
            var options = new ZeroCopySendFileOptions
            {
                MinimumLength = registered.MinimumLength,
                CachedMinimumLength = registered.CachedMinimumLength,
                RecentWriteWindow = registered.RecentWriteWindow,
            };
            configure?.Invoke(options);

            // As the server-level options are checked: a negative value stops the host as it starts, naming the setting.
            var failures = new List<string>();
            options.Validate(failures, $"{nameof(ZeroCopySendFileOptions)} of {listenOptions}");
            if (failures.Count > 0)
            {
                throw new OptionsValidationException(Options.DefaultName, typeof(ZeroCopySendFileOptions), failures);
            }

            // The app's file caches keep descriptors for the cached bodies this endpoint sends with sendfile(2): the
            // container's options (UseFastFiles, the lane) and, without AddFastFiles, the ones FastResults resolves.
            if (listenOptions.ApplicationServices is { } services)
            {
                services.GetService<IOptions<FastFilesOptions>>()?.Value.RequestCachedDescriptors(options.CachedMinimumLength);
                FastFilesOptionsSource.FastFilesOptions(services).RequestCachedDescriptors(options.CachedMinimumLength);
            }

            ILogger logger = listenOptions.ApplicationServices?.GetService<ILoggerFactory>()?.CreateLogger(LoggerCategory) ?? NullLogger.Instance;
            // Output held back for the batching send is bounded as Kestrel's own output is (KestrelServerLimits, read as the
            // endpoint is built, so limits set after this call count).
            long? maxResponseBufferSize = (listenOptions.KestrelServerOptions?.Limits ?? new KestrelServerLimits()).MaxResponseBufferSize;
            return new SendPathConnectionMiddleware(next, options, maxResponseBufferSize, FastFilesMetrics.For(listenOptions.ApplicationServices), logger).OnConnectionAsync;
        });
        return listenOptions;
    }
}
