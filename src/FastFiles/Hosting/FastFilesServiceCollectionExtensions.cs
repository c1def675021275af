using System.Diagnostics.Metrics;
using FastFiles.Diagnostics;
using FastFiles.Hosting;
using FastFiles.Responses;
using FastFiles.StaticFiles;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers FastFiles' options.</summary>
public static class FastFilesServiceCollectionExtensions
{
    /// <summary>The configuration section FastFiles binds by default: <c>FastFiles</c>.</summary>
    public const string ConfigurationSectionName = FastFilesConfiguration.SectionName;

    /// <summary>
    /// Adds FastFiles' options, bound from the <c>FastFiles</c> configuration section (and
    /// <c>FastFiles:StaticFiles</c> for <see cref="FastStaticFileOptions"/>, <c>FastFiles:StaticLane</c> for
    /// <see cref="StaticLaneOptions"/>), then applies <paramref name="configure"/>.
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="configure">Optional code configuration, applied after configuration binding.</param>
    /// <returns>The service collection.</returns>
    public static IServiceCollection AddFastFiles(this IServiceCollection services, Action<FastFilesOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        AddCore(services);
        services.AddOptions<FastFilesOptions>().BindConfiguration(ConfigurationSectionName);
        services.AddOptions<FastStaticFileOptions>().BindConfiguration(ConfigurationSectionName + ":StaticFiles");
        services.AddOptions<StaticLaneOptions>().BindConfiguration(ConfigurationSectionName + ":StaticLane");
        if (configure is not null)
        {
            services.Configure(configure);
        }

        return services;
    }

    /// <summary>Adds FastFiles' options bound from an explicit configuration section.</summary>
    /// <param name="services">The service collection.</param>
    /// <param name="configuration">The section holding <see cref="FastFilesOptions"/>; its <c>StaticFiles</c> child holds <see cref="FastStaticFileOptions"/>, its <c>StaticLane</c> child <see cref="StaticLaneOptions"/>.</param>
    /// <returns>The service collection.</returns>
    public static IServiceCollection AddFastFiles(this IServiceCollection services, IConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configuration);
        AddCore(services);
        services.AddOptions<FastFilesOptions>().Bind(configuration);
        services.AddOptions<FastStaticFileOptions>().Bind(configuration.GetSection("StaticFiles"));
        services.AddOptions<StaticLaneOptions>().Bind(configuration.GetSection("StaticLane"));
        return services;
    }

    /// <summary>Configures the options of <c>UseFastFiles()</c>.</summary>
    /// <param name="services">The service collection.</param>
    /// <param name="configure">The configuration code.</param>
    /// <returns>The service collection.</returns>
    public static IServiceCollection ConfigureFastStaticFiles(this IServiceCollection services, Action<FastStaticFileOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        return services.Configure(configure);
    }

    /// <summary>
    /// Configures the HTTP/1.1 static lane's roots (<see cref="StaticLaneOptions"/>), used by endpoints with
    /// <c>UseStaticLane()</c> or <c>FastFilesKestrelOptions.EnableStaticLane</c>. Lane responses never reach the
    /// application's middleware: add only public roots.
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="configure">The configuration code.</param>
    /// <returns>The service collection.</returns>
    public static IServiceCollection ConfigureStaticLane(this IServiceCollection services, Action<StaticLaneOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        return services.Configure(configure);
    }

    private static void AddCore(IServiceCollection services)
    {
        services.TryAddSingleton(sp => new FastFilesMetrics(sp.GetService<IMeterFactory>()));
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IPostConfigureOptions<FastFilesOptions>, FastFilesOptionsSetup>());
        services.TryAddSingleton<FastFilesOptionsSource.Registration>();
        // Takes the addresses Kestrel will bind, so URL endpoints can get FastFiles' connection parts.
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IStartupFilter, ServerAddressesStartupFilter>());
        services.TryAddSingleton<FastFilesFingerprinter>();
        services.TryAddSingleton<Microsoft.AspNetCore.Http.IFastFilesFingerprinter>(sp => sp.GetRequiredService<FastFilesFingerprinter>());
        // The descriptor reserve checked in Kestrel's accept loop, where a burst of connections cannot outrun it.
        DescriptorReserveListenerFactory.Register(services);
    }
}
