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

    public const string KestrelSectionName = SectionName + ":Kestrel";

    public static bool IsRegistered(IServiceProvider services) => FastFilesOptionsSource.IsRegistered(services);

    public static FastFilesOptions FastFilesOptions(IServiceProvider services) => FastFilesOptionsSource.FastFilesOptions(services);

    public static FastStaticFileOptions StaticFileOptions(IServiceProvider services)
        => FastFilesOptionsSource.Resolve<FastStaticFileOptions>(services, StaticFilesSectionName);
}
