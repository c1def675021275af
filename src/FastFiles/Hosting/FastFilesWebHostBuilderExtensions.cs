using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Transport.Sockets;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>Host settings for serving files.</summary>
public static class FastFilesWebHostBuilderExtensions
{
    /// <summary>
    /// Applies FastFiles' tuned host profile (README, "Tuned host profile"; measured per setting in
    /// <c>benchmarks/results/tuned-knobs-2026-11-23</c>): hosting's per-request diagnostics logging is off
    /// (<c>Microsoft.AspNetCore.Hosting.Diagnostics</c> at <c>None</c>; with a template app's logging this removes a log
    /// scope and its state per request, 830 to 6 bytes allocated per 1 KiB response) and Kestrel sends no <c>Server</c>
    /// header (17 bytes less per HTTP/1.1 response). The socket transport is left at its defaults: inline scheduling
    /// (<c>UnsafePreferInlineScheduling</c>) allocates less per request but makes every response flush its own send
    /// system call, which cost pipelined HTTP/1.1 clients up to 0.21x of the defaults' throughput.
    /// </summary>
    /// <remarks>
    /// The trade-offs: no request start/finish log lines and no hosting log scope (request id and path) on the app's
    /// own log entries; clients and scanners cannot tell the server from its headers. Settings made after this call win.
    /// </remarks>
    /// <param name="builder">The web host builder (<c>builder.WebHost</c>).</param>
    /// <returns>The same builder.</returns>
    public static IWebHostBuilder UseFastFilesTunedProfile(this IWebHostBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.ConfigureServices(services =>
        {
            services.Configure<KestrelServerOptions>(kestrel => kestrel.AddServerHeader = false);
            services.AddLogging(logging => logging.AddFilter("Microsoft.AspNetCore.Hosting.Diagnostics", LogLevel.None));
        });
        return builder;
    }

    /// <summary>
    /// Runs every socket continuation on the runtime's socket event thread instead of the thread pool: Kestrel's
    /// <c>SocketTransportOptions.UnsafePreferInlineScheduling</c>, no zero-byte read before each receive
    /// (<c>WaitForDataBeforeAllocatingBuffer = false</c>), and the runtime's inline socket completions
    /// (<c>DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS=1</c>, set for this process when it is not set already). With the
    /// HTTP/1.1 static lane this removes the thread-pool hops per request (README, "Inline sockets"; measured in
    /// <c>benchmarks/results/lane-inline-2026-11-23</c>). Off unless called.
    /// </summary>
    /// <remarks>
    /// Unsafe as Kestrel's option name says: application code (every request the lane hands to Kestrel, and the
    /// middleware pipeline behind it) then runs on the event thread, so one request that blocks (synchronous I/O, a
    /// lock, <c>.Result</c>) stalls every connection served by that thread. Use it for servers whose requests do not
    /// block. The runtime reads the environment variable when the process first uses a socket: call this before
    /// anything in the process opens one (an <c>HttpClient</c> call during startup would), or set the variable in the
    /// environment that starts the process.
    /// </remarks>
    /// <param name="builder">The web host builder (<c>builder.WebHost</c>).</param>
    /// <returns>The same builder.</returns>
    public static IWebHostBuilder UseFastFilesInlineSockets(this IWebHostBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        if (Environment.GetEnvironmentVariable(InlineCompletionsVariable) is null)
        {
            Environment.SetEnvironmentVariable(InlineCompletionsVariable, "1");
        }

        builder.ConfigureServices(services => services.Configure<SocketTransportOptions>(sockets =>
        {
            sockets.UnsafePreferInlineScheduling = true;
            sockets.WaitForDataBeforeAllocatingBuffer = false;
        }));
        return builder;
    }

    private const string InlineCompletionsVariable = "DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS";
}
