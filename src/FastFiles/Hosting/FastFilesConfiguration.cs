using System.Runtime.CompilerServices;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace FastFiles.Hosting;

/// <summary>
/// Where FastFiles' options come from: the container's, bound from configuration by <c>AddFastFiles</c>; or, for an
/// app that never called <c>AddFastFiles</c> (stock <c>UseStaticFiles</c> needs no registration either), the same
/// configuration sections bound here, followed by any code configuration in the container.
/// </summary>
internal static class FastFilesConfiguration
{
    public const string SectionName = "FastFiles";

    public const string StaticFilesSectionName = SectionName + ":StaticFiles";

    public const string KestrelSectionName = SectionName + ":Kestrel";

    // One resolution per container: every UseFastSendFile, UseFastFiles and WithFastFiles of an app shares it.
    private static readonly ConditionalWeakTable<IServiceProvider, FastFilesOptions> Resolved = [];

    public static bool IsRegistered(IServiceProvider services) => services.GetService<Registration>() is not null;

    public static FastFilesOptions FastFilesOptions(IServiceProvider services)
        => Resolved.GetValue(services, static s => Resolve<FastFilesOptions>(s, SectionName));

    public static FastStaticFileOptions StaticFileOptions(IServiceProvider services)
        => Resolve<FastStaticFileOptions>(services, StaticFilesSectionName);

    private static T Resolve<T>(IServiceProvider services, string section)
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
