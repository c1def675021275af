using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace FastFiles.Hosting;

/// <summary>
/// Runs while the host builds the request pipeline: the server's addresses (configured URLs, <c>app.Urls</c>,
/// <c>app.Run(url)</c>) are final then, every <c>ConfigureKestrel</c> callback has run (so FastFiles' endpoint defaults
/// can be composed with one the app set later), and Kestrel has not started binding, which clears the addresses.
/// </summary>
internal sealed class ServerAddressesStartupFilter : IStartupFilter
{
    public Action<IApplicationBuilder> Configure(Action<IApplicationBuilder> next) => app =>
    {
        IServiceProvider services = app.ApplicationServices;
        if (services.GetService<IServer>()?.Features.Get<IServerAddressesFeature>()?.Addresses is { } addresses
            && services.GetService<IOptions<KestrelServerOptions>>()?.Value is { } kestrel)
        {
            ConnectionPartsCoverage.SetAddresses(kestrel, [.. addresses]);
            ConnectionPartsCoverage.EnsureEndpointDefaults(kestrel, services);
            ConnectionPartsCoverage.CompleteConfigurationEndpoints(kestrel);
        }

        next(app);
    };
}
