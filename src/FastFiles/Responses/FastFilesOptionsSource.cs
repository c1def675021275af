using System.Runtime.CompilerServices;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace FastFiles.Responses;

/// <summary>
/// Where FastFiles' options come from: the container's, bound from configuration by <c>AddFastFiles</c>; or, for an
/// app that never called <c>AddFastFiles</c> (stock <c>UseStaticFiles</c> and <c>Results.File</c> need no registration
/// either), the same configuration section bound here, followed by any code configuration in the container.
/// </summary>
internal static class FastFilesOptionsSource
{
    public const string SectionName = "FastFiles";

    // One resolution per container, keyed by its singleton IOptions<FastFilesOptions> so that a request's scoped
    // provider (results run with RequestServices) finds the app's entry: every UseFastSendFile, UseFastFiles,
    // WithFastFiles and FastResults of an app shares it.
    private static readonly ConditionalWeakTable<object, FastFilesOptions> Resolved = [];

    public static bool IsRegistered(IServiceProvider services) => services.GetService<Registration>() is not null;

    public static FastFilesOptions FastFilesOptions(IServiceProvider services)
    {
        object key = services.GetService<IOptions<FastFilesOptions>>() ?? (object)services;
        if (Resolved.TryGetValue(key, out FastFilesOptions? options))
        {
            return options;
        }

        return Resolved.GetValue(key, _ => Resolve<FastFilesOptions>(services, SectionName));
    }

    public static T Resolve<T>(IServiceProvider services, string section)
        where T : class
    {
        if (IsRegistered(services))
        {
            return services.GetRequiredService<IOptions<T>>().Value;
        }

        var setups = new List<IConfigureOptions<T>>();
        if (services.GetService<IConfiguration>() is { } configuration)
        {
            setups.Add(new ConfigureFromConfigurationOptions<T>(configuration.GetSection(section)));
        }

        setups.AddRange(services.GetServices<IConfigureOptions<T>>());
        return new OptionsFactory<T>(setups, services.GetServices<IPostConfigureOptions<T>>()).Create(Options.DefaultName);
    }

    /// <summary>Registered by <c>AddFastFiles</c>: the container's options are bound from configuration.</summary>
    internal sealed class Registration;
}
