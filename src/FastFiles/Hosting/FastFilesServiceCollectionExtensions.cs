using System.Diagnostics.Metrics;
using FastFiles.Caching;
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
    /// <param name="configure">Optional code configuration, applied after configuration binding. Code configuration of
    /// these options registered before this call (<c>ConfigureFastStaticFiles</c>, <c>Configure&lt;FastFilesOptions&gt;</c>)
    /// also runs after the binding.</param>
    /// <returns>The service collection.</returns>
    public static IServiceCollection AddFastFiles(this IServiceCollection services, Action<FastFilesOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        AddCore(services);
        BindFirst<FastFilesOptions>(services, FastFilesConfiguration.SectionName, FastFilesConfiguration.Bind);
        BindFirst<FastStaticFileOptions>(services, FastFilesConfiguration.StaticFilesSectionName, FastFilesConfiguration.Bind);
        BindFirst<StaticLaneOptions>(services, FastFilesConfiguration.StaticLaneSectionName, FastFilesConfiguration.Bind);
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
        BindFirst<FastFilesOptions>(services, configuration, FastFilesConfiguration.Bind);
        BindFirst<FastStaticFileOptions>(services, configuration.GetSection("StaticFiles"), FastFilesConfiguration.Bind);
        BindFirst<StaticLaneOptions>(services, configuration.GetSection("StaticLane"), FastFilesConfiguration.Bind);
        return services;
    }

    // A section of the app's configuration, as OptionsBuilder.BindConfiguration binds it (resolved when the options are
    // built, with a change token source for the whole configuration).
    private static void BindFirst<T>(IServiceCollection services, string sectionPath, Action<IConfiguration, T> bind)
        where T : class
        => BindFirst<T>(services, () =>
        {
            services.AddOptions<T>().Configure<IConfiguration>((options, configuration) => bind(configuration.GetSection(sectionPath), options));
            services.AddSingleton<IOptionsChangeTokenSource<T>, ConfigurationChangeTokenSource<T>>();
        });

    // An explicit section, as OptionsBuilder.Bind(IConfiguration) binds it.
    private static void BindFirst<T>(IServiceCollection services, IConfiguration section, Action<IConfiguration, T> bind)
        where T : class
        => BindFirst<T>(services, () =>
        {
            services.AddOptions<T>().Configure(options => bind(section, options));
            services.AddSingleton<IOptionsChangeTokenSource<T>>(new ConfigurationChangeTokenSource<T>(Options.Options.DefaultName, section));
        });

    // Configuration binding goes before any code configuration of the same options registered earlier
    // (ConfigureFastStaticFiles before AddFastFiles): code always has the last word, whatever the call order.
    private static void BindFirst<T>(IServiceCollection services, Action bind)
        where T : class
    {
        int before = services.Count;
        bind();
        int first = -1;
        for (int i = 0; i < before; i++)
        {
            if (services[i].ServiceType == typeof(IConfigureOptions<T>))
            {
                first = i;
                break;
            }
        }

        if (first < 0)
        {
            return;
        }

        // Move what the binding added (its IConfigureOptions<T> and change-token source) ahead of the first one.
        var added = new List<ServiceDescriptor>();
        for (int i = services.Count - 1; i >= before; i--)
        {
            added.Insert(0, services[i]);
            services.RemoveAt(i);
        }

        for (int i = 0; i < added.Count; i++)
        {
            services.Insert(first + i, added[i]);
        }
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
        // A value that could only fail per request stops the host at start instead.
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<FastFilesOptions>, FastFilesOptionsValidator>());
        services.AddOptions<FastFilesOptions>().ValidateOnStart();
        services.TryAddSingleton<FastFilesOptionsSource.Registration>();
        // Disposed with the container: releases caches, watchers and timers also when a host is disposed without a stop.
        services.TryAddSingleton<FastFilesResources>();
        // Takes the addresses Kestrel will bind, so URL endpoints can get FastFiles' connection parts.
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IStartupFilter, ServerAddressesStartupFilter>());
        services.TryAddSingleton<FastFilesFingerprinter>();
        services.TryAddSingleton<Microsoft.AspNetCore.Http.IFastFilesFingerprinter>(sp => sp.GetRequiredService<FastFilesFingerprinter>());
        // The descriptor reserve checked in Kestrel's accept loop, where a burst of connections cannot outrun it.
        DescriptorReserveListenerFactory.Register(services);
    }
}
