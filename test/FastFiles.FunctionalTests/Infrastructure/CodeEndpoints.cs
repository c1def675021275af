using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>Apps whose endpoints a test declares in code (<c>ConfigureKestrel</c>), on loopback ports the OS picks.</summary>
public static class CodeEndpoints
{
    /// <summary>A Production builder with no logging providers and no configuration reload; <paramref name="args"/> as command-line arguments.</summary>
    public static WebApplicationBuilder CreateBuilder(params string[] args)
    {
        WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args = ["--hostBuilder:reloadConfigOnChange=false", .. args],
            EnvironmentName = Environments.Production,
            ContentRootPath = AppContext.BaseDirectory,
        });
        builder.Logging.ClearProviders();
        return builder;
    }

    /// <summary>Starts <paramref name="app"/> and returns its addresses in the order the endpoints were declared.</summary>
    public static async Task<Uri[]> StartAsync(WebApplication app)
    {
        await app.StartAsync();
        return [.. app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Select(a => new Uri(a))];
    }
}
