using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>Host settings for serving files.</summary>
public static class FastFilesWebHostBuilderExtensions
{
    /// <summary>
    /// Applies FastFiles' tuned host profile (README, "Tuned host profile", with each setting's measured effect from
    /// <c>benchmarks/results/mapstaticassets-tuned-2026-11-23</c>): socket continuations run inline on the I/O thread
    /// instead of hopping to the thread pool (<c>SocketTransportOptions.UnsafePreferInlineScheduling</c>; measured to cut
    /// allocations per request, for example from 2,367 to 84 bytes for 64 KiB over HTTP/1.1 and TLS), receive buffers are
    /// taken without a zero-byte read first (<c>WaitForDataBeforeAllocatingBuffer = false</c>), no <c>Server</c> header,
    /// and hosting's per-request diagnostics logging is off (<c>Microsoft.AspNetCore.Hosting.Diagnostics</c> at <c>None</c>).
    /// </summary>
    /// <remarks>
    /// The trade-offs: with inline scheduling, application code that blocks (synchronous I/O, <c>.Result</c>, locks
    /// held across slow work) stalls every connection served by that I/O thread, so use it only for apps that do not
    /// block; without the zero-byte read every idle keep-alive connection holds a 4 KiB receive buffer; the request
    /// start/stop log lines are gone. Settings made after this call win.
    /// </remarks>
    /// <param name="builder">The web host builder (<c>builder.WebHost</c>).</param>
    /// <returns>The same builder.</returns>
    public static IWebHostBuilder UseFastFilesTunedProfile(this IWebHostBuilder builder)
    {
        ArgumentNullException.ThrowIfNull(builder);
        builder.UseSockets(sockets =>
        {
            sockets.UnsafePreferInlineScheduling = true;
            sockets.WaitForDataBeforeAllocatingBuffer = false;
        });
        builder.ConfigureServices(services =>
        {
            services.Configure<KestrelServerOptions>(kestrel => kestrel.AddServerHeader = false);
            services.AddLogging(logging => logging.AddFilter("Microsoft.AspNetCore.Hosting.Diagnostics", LogLevel.None));
        });
        return builder;
    }
}
