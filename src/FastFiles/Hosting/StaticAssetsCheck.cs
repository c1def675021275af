using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Routing;
using Microsoft.AspNetCore.StaticAssets;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace FastFiles.Hosting;

/// <summary>
/// <c>UseFastFiles()</c> next to <c>MapStaticAssets()</c> serves nothing through FastFiles: routing matches the asset
/// endpoints first (WebApplication routes before the first middleware), and FastFiles, like <c>UseStaticFiles</c>,
/// leaves a matched endpoint alone. Said once, when the pipeline is built (every endpoint is mapped by then).
/// </summary>
internal static class StaticAssetsCheck
{
    public static void WarnIfShadowed(IServiceProvider services, ILogger logger)
    {
        if (services.GetService<EndpointDataSource>() is not { } endpoints)
        {
            return;
        }

        int count = 0;
        string? example = null;
        foreach (Microsoft.AspNetCore.Http.Endpoint endpoint in endpoints.Endpoints)
        {
            if (endpoint.Metadata.GetMetadata<StaticAssetDescriptor>() is { } asset && endpoint.Metadata.GetMetadata<FastFilesEndpointMetadata>() is null)
            {
                count++;
                example ??= "/" + asset.Route;
            }
        }

        if (count > 0)
        {
            Log.StaticAssetsNotAccelerated(logger, count, example!);
        }
    }
}
