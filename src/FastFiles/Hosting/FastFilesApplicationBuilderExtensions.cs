using FastFiles.Hosting;
using FastFiles.SendFile;
using FastFiles.StaticFiles;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Adds FastFiles' middleware to a request pipeline.</summary>
public static class FastFilesApplicationBuilderExtensions
{
    /// <summary>
    /// Replaces Kestrel's <c>SendFileAsync</c> for everything after this call, so <c>UseStaticFiles</c>,
    /// <c>Results.File</c> and MVC's <c>PhysicalFileResult</c> send files through FastFiles' pipe copy. Does
    /// nothing for requests whose response body someone above has already replaced, or on servers other than Kestrel.
    /// </summary>
    /// <param name="app">The application builder.</param>
    /// <returns>The application builder.</returns>
    public static IApplicationBuilder UseFastSendFile(this IApplicationBuilder app)
    {
        ArgumentNullException.ThrowIfNull(app);
        return app.UseMiddleware<FastSendFileMiddleware>(Options.Create(FastFilesConfiguration.ValidatedFastFilesOptions(app.ApplicationServices)));
    }

    /// <summary>
    /// Serves static files with FastFiles: a drop-in for <c>UseStaticFiles</c>, configured by
    /// <see cref="FastStaticFileOptions"/> bound from the <c>FastFiles:StaticFiles</c> configuration section, then code
    /// (<c>AddFastFiles</c>, <c>ConfigureFastStaticFiles</c>). Without <c>AddFastFiles</c> the sections are bound here.
    /// Logs a warning at startup when <c>MapStaticAssets</c> endpoints would take the requests (add <c>WithFastFiles()</c> to them).
    /// </summary>
    /// <param name="app">The application builder.</param>
    /// <returns>The application builder.</returns>
    public static IApplicationBuilder UseFastFiles(this IApplicationBuilder app)
    {
        ArgumentNullException.ThrowIfNull(app);
        return app.UseFastFiles(FastFilesConfiguration.StaticFileOptions(app.ApplicationServices));
    }

    /// <summary>Serves static files under <paramref name="requestPath"/> from the web root.</summary>
    /// <param name="app">The application builder.</param>
    /// <param name="requestPath">The URL prefix, for example <c>/static</c>.</param>
    /// <returns>The application builder.</returns>
    public static IApplicationBuilder UseFastFiles(this IApplicationBuilder app, string requestPath)
    {
        ArgumentNullException.ThrowIfNull(app);
        return app.UseFastFiles(new FastStaticFileOptions { RequestPath = new PathString(requestPath) });
    }

    /// <summary>Serves static files with explicit options (the container's <see cref="FastStaticFileOptions"/> are not used).</summary>
    /// <param name="app">The application builder.</param>
    /// <param name="options">The options.</param>
    /// <returns>The application builder.</returns>
    public static IApplicationBuilder UseFastFiles(this IApplicationBuilder app, FastStaticFileOptions options)
    {
        ArgumentNullException.ThrowIfNull(app);
        ArgumentNullException.ThrowIfNull(options);
        IServiceProvider services = app.ApplicationServices;
        // Runs when the pipeline is built, after every endpoint has been mapped; adds nothing per request.
        app.Use(next =>
        {
            StaticAssetsCheck.WarnIfShadowed(services, services.GetRequiredService<ILoggerFactory>().CreateLogger("FastFiles.StaticFiles"));
            return next;
        });
        return app.UseMiddleware<FastStaticFileMiddleware>(Options.Create(options), Options.Create(FastFilesConfiguration.ValidatedFastFilesOptions(services)));
    }
}
