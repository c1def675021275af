using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace FastFiles.Hosting;

/// <summary>
/// The FastFiles Kestrel options an application gave <c>KestrelServerOptions.UseFastFilesConnections(...)</c>, found
/// again when each endpoint is built (so endpoint extensions may run before or after that call).
/// </summary>
/// <remarks>
/// Carried by the application's container rather than a registry of ours: the host registers <c>IOptions&lt;&gt;</c>
/// for every options type, so <c>IOptions&lt;FastFilesKestrelState&gt;</c> is one instance per container even when the
/// app never calls <c>AddFastFiles()</c>, and Kestrel is configured after the container is built, when nothing can be
/// registered any more.
/// </remarks>
internal sealed class FastFilesKestrelState
{
    /// <summary>The options, or <see langword="null"/> when the server-level call was not made.</summary>
    public FastFilesKestrelOptions? Options { get; set; }

    public static FastFilesKestrelState? Of(IServiceProvider? services) => services?.GetService<IOptions<FastFilesKestrelState>>()?.Value;

    /// <summary>The server's registered options, else the defaults.</summary>
    public static FastFilesKestrelOptions OptionsFor(ListenOptions listenOptions)
        => Of(listenOptions.ApplicationServices)?.Options ?? new FastFilesKestrelOptions();
}
