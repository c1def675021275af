using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace FastFiles.Responses;

/// <summary>
/// Settles <see cref="FastFilesOptions.DisableStringReuse"/> once, for the middleware and the results alike: left
/// unset, it follows <see cref="KestrelServerOptions.DisableStringReuse"/>. Registered by <c>AddFastFiles</c>; apps
/// that skip it get the same rule from <see cref="DisablesStringReuse"/>.
/// </summary>
internal sealed class FastFilesOptionsSetup(IServiceProvider services) : IPostConfigureOptions<FastFilesOptions>
{
    public void PostConfigure(string? name, FastFilesOptions options)
        => options.DisableStringReuse ??= KestrelDisablesStringReuse(services);

    /// <summary>The setting in effect: FastFiles' own when set (or settled), else Kestrel's.</summary>
    public static bool DisablesStringReuse(FastFilesOptions options, IServiceProvider? services)
        => options.DisableStringReuse ?? KestrelDisablesStringReuse(services);

    private static bool KestrelDisablesStringReuse(IServiceProvider? services)
        => services?.GetService<IOptions<KestrelServerOptions>>()?.Value.DisableStringReuse ?? false;
}
