using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Extensions.FileProviders;

namespace Microsoft.AspNetCore.Builder;

/// <summary>
/// Options for <c>UseFastFiles</c>. Names match <c>StaticFileOptions</c> where the option exists there.
/// Bindable from the <c>FastFiles:StaticFiles</c> configuration section (the scalar options).
/// </summary>
public sealed class FastStaticFileOptions
{
    /// <summary>The default fingerprint pattern: a dot or dash, 8 to 64 hex digits, then the extension (<c>app.3f2a9c1b.js</c>).</summary>
    public const string DefaultFingerprintPattern = @"[.\-][0-9a-fA-F]{8,64}\.[A-Za-z0-9]+$";

    /// <summary>The Cache-Control value sent for fingerprinted paths.</summary>
    public const string ImmutableCacheControl = "public, max-age=31536000, immutable";

    /// <summary>The URL prefix the files are served under.</summary>
    /// <remarks>Defaults to the empty path (the site root).</remarks>
    public PathString RequestPath { get; set; } = PathString.Empty;

    /// <summary>Where files come from.</summary>
    /// <remarks>
    /// Defaults to <see langword="null"/>: the host's <c>IWebHostEnvironment.WebRootFileProvider</c>. A
    /// <see cref="PhysicalFileProvider"/> (the usual case) is served through FastFiles' handle-based path.
    /// </remarks>
    public IFileProvider? FileProvider { get; set; }

    /// <summary>Maps file names to content types.</summary>
    /// <remarks>Defaults to <see langword="null"/>: a shared <see cref="FileExtensionContentTypeProvider"/>.</remarks>
    public IContentTypeProvider? ContentTypeProvider { get; set; }

    /// <summary>Whether files whose extension has no known content type are served (with <see cref="DefaultContentType"/>).</summary>
    /// <remarks>Defaults to <see langword="false"/>, as in UseStaticFiles: unknown types fall through to the next middleware.</remarks>
    public bool ServeUnknownFileTypes { get; set; }

    /// <summary>The content type for unknown file types when <see cref="ServeUnknownFileTypes"/> is on.</summary>
    /// <remarks>Defaults to <see langword="null"/> (no Content-Type header), as in UseStaticFiles.</remarks>
    public string? DefaultContentType { get; set; }

    /// <summary>Called after the status and headers are set and before the body is written, for every response FastFiles generates.</summary>
    /// <remarks>Defaults to <see langword="null"/>.</remarks>
    public Action<FastFileResponseContext>? OnPrepareResponse { get; set; }

    /// <summary>
    /// File names tried, in order, when a request names a directory (for example <c>index.html</c>). Empty means
    /// directories are not served, which is what UseStaticFiles does.
    /// </summary>
    /// <remarks>Defaults to an empty list.</remarks>
    public IList<string> DefaultFileNames { get; set; } = new List<string>();

    /// <summary>
    /// When a directory with a default file is requested without a trailing slash, redirect (301) to the path with one,
    /// so relative links in the page resolve.
    /// </summary>
    /// <remarks>Defaults to <see langword="true"/>.</remarks>
    public bool RedirectToAppendTrailingSlash { get; set; } = true;

    /// <summary>Whether files and directories whose name starts with a dot (<c>.env</c>, <c>.git/</c>) may be served.</summary>
    /// <remarks>Defaults to <see langword="false"/>: any dot segment anywhere in the path is not served.</remarks>
    public bool ServeDotFiles { get; set; }

    /// <summary>
    /// Whether files reached through symbolic links that resolve outside the root are served. Links that stay
    /// inside the root are always followed.
    /// </summary>
    /// <remarks>Defaults to <see langword="false"/>. Applies to physical roots.</remarks>
    public bool FollowSymlinksOutsideRoot { get; set; }

    /// <summary>
    /// Serve <c>file.br</c>, <c>file.zst</c> or <c>file.gz</c> from beside <c>file</c> when the request's
    /// Accept-Encoding allows it, with <c>Content-Encoding</c> and <c>Vary: Accept-Encoding</c>.
    /// </summary>
    /// <remarks>Defaults to <see langword="true"/>.</remarks>
    public bool EnablePrecompressedFiles { get; set; } = true;

    /// <summary>The Cache-Control value for files that do not match <see cref="FingerprintPattern"/>.</summary>
    /// <remarks>Defaults to <see langword="null"/>: no Cache-Control header.</remarks>
    public string? CacheControl { get; set; }

    /// <summary>
    /// A regular expression matched against the request's sub-path; matching (content-hashed) files are sent
    /// with <see cref="ImmutableCacheControl"/>. Set to <see langword="null"/> or empty to turn this off.
    /// </summary>
    /// <remarks>Defaults to <see cref="DefaultFingerprintPattern"/>.</remarks>
    public string? FingerprintPattern { get; set; } = DefaultFingerprintPattern;
}
