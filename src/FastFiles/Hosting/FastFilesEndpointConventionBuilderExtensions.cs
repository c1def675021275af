using FastFiles.Hosting;
using FastFiles.SendFile;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.StaticAssets;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace Microsoft.AspNetCore.Builder;

/// <summary>Puts FastFiles' send path under endpoints that send files, such as those of <c>MapStaticAssets</c>.</summary>
public static class FastFilesEndpointConventionBuilderExtensions
{
    /// <summary>
    /// Sends the files of these endpoints through FastFiles: <c>app.MapStaticAssets().WithFastFiles();</c>. Each
    /// endpoint runs with FastFiles' <c>SendFileAsync</c> (the same one <c>UseFastSendFile</c> installs), so the
    /// endpoint keeps its own semantics (for <c>MapStaticAssets</c>: its manifest, fingerprinted routes, ETags,
    /// integrity, precompressed variants and headers) while the file bytes go through FastFiles' pipe copy. For
    /// <c>MapStaticAssets</c> endpoints, unconditional full GETs of assets up to <c>FastFilesOptions.MaxCachedFileSize</c>
    /// are answered from memory with MapStaticAssets' own headers (not while MapStaticAssets reloads changed assets at
    /// run time, as it does for a build's manifest or with <c>ReloadStaticAssetsAtRuntime</c>; not with
    /// <c>EnableFileCache</c> off; not when a middleware above has replaced the response body, as response compression
    /// does; and not when another convention added before this one wraps the endpoint's delegate, which then runs for
    /// every request: call <c>WithFastFiles()</c> first to keep answers from memory). Works in any middleware order, since
    /// it is part of the endpoint.
    /// </summary>
    /// <typeparam name="TBuilder">The endpoint convention builder, for example <c>StaticAssetsEndpointConventionBuilder</c>.</typeparam>
    /// <param name="builder">The endpoints.</param>
    /// <returns>The same builder.</returns>
    public static TBuilder WithFastFiles<TBuilder>(this TBuilder builder)
        where TBuilder : IEndpointConventionBuilder
    {
        ArgumentNullException.ThrowIfNull(builder);
        var shared = new System.Collections.Concurrent.ConcurrentDictionary<(string, string), byte[]>();
        builder.Add(endpoint =>
        {
            if (endpoint.RequestDelegate is not { } inner || endpoint.Metadata.OfType<FastFilesEndpointMetadata>().Any())
            {
                return;
            }

            // Built on the first request: endpoints of some data sources (MapStaticAssets') have no application
            // services at convention time.
            FastSendFileMiddleware? middleware = null;
            RequestDelegate send = context => (middleware ??= Create(inner, context.RequestServices)).Invoke(context);
            // Answers from memory only in place of MapStaticAssets' own delegate: anything wrapped around it before this
            // convention (an app's access check or headers, the runtime reload handler) must run for every request.
            endpoint.RequestDelegate = StaticAssetMemoryResponder.IsStaticAssetsInvoker(inner)
                && endpoint.Metadata.OfType<StaticAssetDescriptor>().FirstOrDefault() is { } asset
                ? StaticAssetMemoryResponder.Wrap(send, asset, shared)
                : send;
            endpoint.Metadata.Add(FastFilesEndpointMetadata.Instance);
        });
        return builder;
    }

    private static FastSendFileMiddleware Create(RequestDelegate inner, IServiceProvider services)
        => new(inner, Options.Create(FastFilesConfiguration.FastFilesOptions(services)), services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance, services);
}
