using FastFiles.Responses;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Configuration;

namespace FastFiles.Hosting;

/// <summary>
/// FastFiles' configuration sections, and the options bound from them whether or not the app called
/// <c>AddFastFiles</c> (see <see cref="FastFilesOptionsSource"/>).
/// </summary>
internal static class FastFilesConfiguration
{
    public const string SectionName = FastFilesOptionsSource.SectionName;

    public const string StaticFilesSectionName = SectionName + ":StaticFiles";

    public const string StaticLaneSectionName = SectionName + ":StaticLane";

    public const string KestrelSectionName = SectionName + ":Kestrel";

    public static bool IsRegistered(IServiceProvider services) => FastFilesOptionsSource.IsRegistered(services);

    public static FastFilesOptions FastFilesOptions(IServiceProvider services) => FastFilesOptionsSource.FastFilesOptions(services);

    /// <summary>
    /// The options for a middleware added at start (<c>UseFastFiles</c>, <c>UseFastSendFile</c>): without
    /// <c>AddFastFiles</c> (whose <c>ValidateOnStart</c> covers the rest) they are validated here, so an invalid value
    /// stops the host at start there too. Results and endpoints resolve them per request and are not failed for it.
    /// </summary>
    public static FastFilesOptions ValidatedFastFilesOptions(IServiceProvider services)
    {
        FastFilesOptions options = FastFilesOptions(services);
        if (!IsRegistered(services) && new FastFilesOptionsValidator().Validate(null, options) is { Failed: true } result)
        {
            throw new Microsoft.Extensions.Options.OptionsValidationException(Microsoft.Extensions.Options.Options.DefaultName, typeof(FastFilesOptions), result.Failures);
        }

        return options;
    }

    // One binding per container, as FastFilesOptions: UseFastFiles() and a lane root left to the application's options
    // then hold the same object, which is what lets them share one file cache (SharedFileCaches).
    public static FastStaticFileOptions StaticFileOptions(IServiceProvider services)
        => FastFilesOptionsSource.Bound<FastStaticFileOptions>(services, StaticFilesSectionName, Bind);

    // Binding. The library's calls to ConfigurationBinder are generated at compile time (EnableConfigurationBindingGenerator),
    // so they neither reflect nor warn under trimming and Native AOT. The generated code does not use type converters and
    // so leaves a PathString given as a string (RequestPath=/assets) alone: those are bound here, as the reflection binder
    // binds them (PathString's converter, the same as its implicit conversion from string). ConfigurationBindingTests
    // compare every option with the reflection binder's result. One difference, on purpose: a lane root with a value that
    // does not convert stops the host (as any other bad value does), where the reflection binder dropped that root.
    public static void Bind(IConfiguration section, FastFilesOptions options) => section.Bind(options);

    public static void Bind(IConfiguration section, FastFilesKestrelOptions options) => section.Bind(options);

    public static void Bind(IConfiguration section, FastStaticFileOptions options)
    {
        section.Bind(options);
        BindRequestPath(section, options);
    }

    public static void Bind(IConfiguration section, StaticLaneOptions options)
    {
        int next = options.Roots.Count;
        section.Bind(options);
        // The binder adds a root per child of Roots, skipping only a child that has a value and no children.
        foreach (IConfigurationSection child in section.GetSection(nameof(StaticLaneOptions.Roots)).GetChildren())
        {
            if (!string.IsNullOrEmpty(child.Value) && !child.GetChildren().Any())
            {
                continue;
            }

            if (next < options.Roots.Count && options.Roots[next++].Files is { } files)
            {
                BindRequestPath(child.GetSection(nameof(StaticLaneRootOptions.Files)), files);
            }
        }
    }

    private static void BindRequestPath(IConfiguration section, FastStaticFileOptions options)
    {
        IConfigurationSection path = section.GetSection(nameof(FastStaticFileOptions.RequestPath));
        if (path.Value is not { } value)
        {
            return;
        }

        try
        {
            options.RequestPath = value;
        }
        catch (ArgumentException e)
        {
            throw new InvalidOperationException($"Failed to convert configuration value '{value}' at '{path.Path}' to type '{typeof(PathString)}'.", e);
        }
    }
}
