using FastFiles.Responses;
using Microsoft.AspNetCore.Builder;

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
        => FastFilesOptionsSource.Bound<FastStaticFileOptions>(services, StaticFilesSectionName);
}
