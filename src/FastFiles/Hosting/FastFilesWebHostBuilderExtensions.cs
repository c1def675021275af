using Microsoft.AspNetCore.Server.Kestrel.Core;
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
    /// scope and its state per request, 834 to 20 bytes allocated per 1 KiB response) and Kestrel sends no <c>Server</c>
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
}
