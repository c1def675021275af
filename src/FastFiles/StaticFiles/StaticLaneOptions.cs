namespace Microsoft.AspNetCore.Builder;

/// <summary>
/// Settings of the HTTP/1.1 static lane: the public roots it may serve on its own, before Kestrel parses a request.
/// </summary>
/// <remarks>
/// Requests the lane answers never reach the application's middleware: no authentication or authorization, no
/// rewrites, no CORS, no endpoint routing. Hand it only roots that are public as they are. It does honour the app's
/// <c>AllowedHosts</c>: a request for another host goes to the app, whose host filtering answers it.
/// The application's instance is bound from the <c>FastFiles:StaticLane</c> configuration section (by <c>AddFastFiles</c>,
/// or by the lane itself when <c>AddFastFiles</c> was not called) and refined with <c>ConfigureStaticLane</c>.
/// </remarks>
public sealed class StaticLaneOptions
{
    /// <summary>The roots the lane serves; a request under none of them goes to Kestrel and the application.</summary>
    /// <remarks>Defaults to an empty list: the lane serves nothing.</remarks>
    public IList<StaticLaneRootOptions> Roots { get; } = new List<StaticLaneRootOptions>();
}

/// <summary>One public root of the static lane: a folder on disk and how its files are served.</summary>
public sealed class StaticLaneRootOptions
{
    /// <summary>The folder whose files are served; a relative path is under the app's content root.</summary>
    /// <remarks>
    /// Defaults to <see langword="null"/>: the physical root of <see cref="Files"/>' <c>FileProvider</c> when that is
    /// a <c>PhysicalFileProvider</c>, else the web root; otherwise the lane cannot start. An empty or blank value stops
    /// the app at start with an <c>OptionsValidationException</c> (it would name the content root, configuration files
    /// included).
    /// </remarks>
    public string? PhysicalPath { get; set; }

    /// <summary>
    /// How files are served, with <c>UseFastFiles</c>' option semantics (<c>RequestPath</c>, content types, Cache-Control,
    /// fingerprinted names, dotfiles, symlinks, precompressed sidecars). <c>OnPrepareResponse</c> and <c>OnPrepareResponseAsync</c> must not be set: lane
    /// responses never run application code.
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="null"/>: the application's <c>UseFastFiles</c> options (the registered
    /// <see cref="FastStaticFileOptions"/>), so the lane answers exactly as <c>UseFastFiles</c> does for that root.
    /// </remarks>
    public FastStaticFileOptions? Files { get; set; }
}
