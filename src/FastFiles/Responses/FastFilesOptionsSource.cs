using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using FastFiles.Hosting;
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

    public static bool IsRegistered(IServiceProvider services) => services.GetService<Registration>() is not null;

    public static FastFilesOptions FastFilesOptions(IServiceProvider services) => Bound<FastFilesOptions>(services, SectionName);

    /// <summary>
    /// <see cref="Resolve"/>, once per container: every caller of one app gets the same object (every UseFastSendFile,
    /// UseFastFiles, WithFastFiles and FastResults shares one <c>FastFilesOptions</c>; UseFastFiles()
    /// and a lane root left to the application's options share one FastStaticFileOptions, and so one file cache).
    /// </summary>
    public static T Bound<[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicParameterlessConstructor)] T>(IServiceProvider services, string section)
        where T : class
    {
        // Keyed by the container's singleton IOptions<T> so that a request's scoped provider (results run with
        // RequestServices) finds the app's entry.
        object key = services.GetService<IOptions<T>>() ?? (object)services;
        if (Memo<T>.Resolved.TryGetValue(key, out T? options))
        {
            return options;
        }

        return Memo<T>.Resolved.GetValue(key, _ => Resolve<T>(services, section));
    }

    private static class Memo<[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicParameterlessConstructor)] T>
        where T : class
    {
        public static readonly ConditionalWeakTable<object, T> Resolved = [];
    }

    public static T Resolve<[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicParameterlessConstructor)] T>(IServiceProvider services, string section)
        where T : class
    {
        if (IsRegistered(services))
        {
            return services.GetRequiredService<IOptions<T>>().Value;
        }

        var setups = new List<IConfigureOptions<T>>();
        if (services.GetService<IConfiguration>() is { } configuration)
        {
            IConfigurationSection bound = configuration.GetSection(section);
            setups.Add(new ConfigureNamedOptions<T>(Options.DefaultName, options => Bind(bound, options)));
        }

        setups.AddRange(services.GetServices<IConfigureOptions<T>>());
        return new OptionsFactory<T>(setups, services.GetServices<IPostConfigureOptions<T>>()).Create(Options.DefaultName);
    }

    private static void Bind<T>(IConfiguration section, T options)
        where T : class
    {
        switch (options)
        {
            case FastFilesOptions fastFiles:
                FastFilesConfiguration.Bind(section, fastFiles);
                break;
            case FastStaticFileOptions staticFiles:
                FastFilesConfiguration.Bind(section, staticFiles);
                break;
            case StaticLaneOptions lane:
                FastFilesConfiguration.Bind(section, lane);
                break;
            default:
                throw new InvalidOperationException($"FastFiles binds no options of type {typeof(T)}.");
        }
    }

    /// <summary>Registered by <c>AddFastFiles</c>: the container's options are bound from configuration.</summary>
    internal sealed class Registration;
}
