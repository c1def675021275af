using System.Diagnostics.CodeAnalysis;
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

    public static bool IsRegistered(IServiceProvider services) => services.GetService<Registration>() is not null;

    // Bound with code generated at compile time (trimming, Native AOT); higher layers pass the binding of their own options.
    public static FastFilesOptions FastFilesOptions(IServiceProvider services) => Bound<FastFilesOptions>(services, SectionName, static (section, options) => section.Bind(options));

    /// <summary>
    /// <see cref="Resolve"/>, once per container: every caller of one app gets the same object (every UseFastSendFile,
    /// UseFastFiles, WithFastFiles and FastResults shares one <c>FastFilesOptions</c>; UseFastFiles()
    /// and a lane root left to the application's options share one FastStaticFileOptions, and so one file cache).
    /// </summary>
    public static T Bound<[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicParameterlessConstructor)] T>(IServiceProvider services, string section, Action<IConfiguration, T> bind)
        where T : class
    {
        // Keyed by the container's singleton IOptions<T> so that a request's scoped provider (results run with
        // RequestServices) finds the app's entry.
        object key = services.GetService<IOptions<T>>() ?? (object)services;
        if (Memo<T>.Resolved.TryGetValue(key, out T? options))
        {
            return options;
        }

        return Memo<T>.Resolved.GetValue(key, _ => Resolve(services, section, bind));
    }

    private static class Memo<[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicParameterlessConstructor)] T>
        where T : class
    {
        public static readonly ConditionalWeakTable<object, T> Resolved = [];
    }

    public static T Resolve<[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicParameterlessConstructor)] T>(IServiceProvider services, string section, Action<IConfiguration, T> bind)
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
            setups.Add(new ConfigureNamedOptions<T>(Options.DefaultName, options => bind(bound, options)));
        }

        setups.AddRange(services.GetServices<IConfigureOptions<T>>());
        return new OptionsFactory<T>(setups, services.GetServices<IPostConfigureOptions<T>>()).Create(Options.DefaultName);
    }

    /// <summary>Registered by <c>AddFastFiles</c>: the container's options are bound from configuration.</summary>
    internal sealed class Registration;
}
