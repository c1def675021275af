using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using FastFiles.Responses;
using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Microsoft.Net.Http.Headers;

namespace Microsoft.AspNetCore.Http;

/// <summary>
/// Sends a file from disk with FastFiles' semantics: strong ETag and Last-Modified, conditional requests
/// (304/412), single byte ranges (206/416), HEAD, and an optional download name. Works as a minimal-API
/// <see cref="IResult"/> and as an MVC <see cref="ActionResult"/>. A missing file is a 404.
/// </summary>
public sealed class FastPhysicalFileResult : ActionResult, IResult
{
    private static readonly FileExtensionContentTypeProvider ContentTypes = new();

    /// <summary>Creates a result for the file at <paramref name="fileName"/>.</summary>
    /// <param name="fileName">An absolute path to the file.</param>
    /// <param name="contentType">The Content-Type; <see langword="null"/> infers it from the extension (<c>application/octet-stream</c> when unknown).</param>
    /// <exception cref="ArgumentException"><paramref name="fileName"/> is empty or not absolute.</exception>
    public FastPhysicalFileResult(string fileName, string? contentType = null)
    {
        ArgumentException.ThrowIfNullOrEmpty(fileName);
        if (!Path.IsPathFullyQualified(fileName))
        {
            throw new ArgumentException("The path must be absolute.", nameof(fileName));
        }

        FileName = fileName;
        ContentType = contentType ?? (ContentTypes.TryGetContentType(fileName, out string? inferred) ? inferred : "application/octet-stream");
    }

    /// <summary>
    /// Creates a result for <paramref name="relativePath"/> under <paramref name="root"/>, resolved as <c>UseFastFiles</c>
    /// resolves request paths: dot segments, backslashes, NUL and (unless allowed) dotfiles are refused, and a file
    /// whose real location is outside the root (reached through a symbolic link) is a 404.
    /// </summary>
    internal FastPhysicalFileResult(string root, string relativePath, string? contentType)
    {
        ArgumentException.ThrowIfNullOrEmpty(root);
        ArgumentNullException.ThrowIfNull(relativePath);
        if (!Path.IsPathFullyQualified(root))
        {
            throw new ArgumentException("The root must be absolute.", nameof(root));
        }

        RootDirectory = root;
        FileName = relativePath;
        ContentType = contentType ?? (ContentTypes.TryGetContentType(relativePath, out string? inferred) ? inferred : "application/octet-stream");
    }

    /// <summary>The path of the file to send: absolute, or relative to <see cref="RootDirectory"/> when that is set.</summary>
    public string FileName { get; }

    /// <summary>The directory <see cref="FileName"/> is relative to, for results made by <see cref="FastResults.File"/>.</summary>
    /// <remarks>Defaults to <see langword="null"/>: <see cref="FileName"/> is absolute and used as given.</remarks>
    public string? RootDirectory { get; }

    /// <summary>With <see cref="RootDirectory"/>: whether files and directories whose name starts with a dot may be sent.</summary>
    /// <remarks>Defaults to <see langword="false"/>.</remarks>
    public bool ServeDotFiles { get; init; }

    /// <summary>With <see cref="RootDirectory"/>: whether a symbolic link that resolves outside the root may be followed.</summary>
    /// <remarks>Defaults to <see langword="false"/>: such a file is a 404, as in <c>UseFastFiles</c>.</remarks>
    public bool FollowSymlinksOutsideRoot { get; init; }

    /// <summary>The Content-Type sent with the file.</summary>
    public string ContentType { get; }

    /// <summary>When set, the file is sent as an attachment with this name (Content-Disposition, RFC 6266).</summary>
    /// <remarks>Defaults to <see langword="null"/>.</remarks>
    public string? FileDownloadName { get; init; }

    /// <summary>Whether Range requests are honoured (and <c>Accept-Ranges: bytes</c> sent).</summary>
    /// <remarks>Defaults to <see langword="true"/>.</remarks>
    public bool EnableRangeProcessing { get; init; } = true;

    /// <summary>The Cache-Control value to send, if any.</summary>
    /// <remarks>Defaults to <see langword="null"/>.</remarks>
    public string? CacheControl { get; init; }

    /// <inheritdoc />
    public override Task ExecuteResultAsync(ActionContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        return ExecuteAsync(context.HttpContext);
    }

    /// <inheritdoc />
    public async Task ExecuteAsync(HttpContext httpContext)
    {
        ArgumentNullException.ThrowIfNull(httpContext);
        IServiceProvider services = httpContext.RequestServices;
        ILogger logger = services?.GetService<ILoggerFactory>()?.CreateLogger("FastFiles.Results") ?? NullLogger.Instance;

        FileVersion? file;
        try
        {
            file = RootDirectory is not null ? OpenUnderRoot(services) : OpenAbsolute();
        }
        catch (IOException ex) when (DescriptorExhaustion.Is(ex))
        {
            UnavailableResponse.Send(httpContext, logger, FileName, ex);
            return;
        }

        if (file is null)
        {
            Log.FileNotFound(logger, FileName);
            httpContext.Response.StatusCode = StatusCodes.Status404NotFound;
            return;
        }

        using (file)
        {
            string? disposition = null;
            if (!string.IsNullOrEmpty(FileDownloadName))
            {
                var header = new ContentDispositionHeaderValue("attachment");
                header.SetHttpFileName(FileDownloadName);
                disposition = header.ToString();
            }

            var settings = new FileResponseSettings
            {
                ContentType = ContentType,
                CacheControl = CacheControl,
                EnableRangeProcessing = EnableRangeProcessing,
                ContentDisposition = disposition,
                LogName = FileName,
            };
            await FileResponder.Create(services, options: null, logger).SendAsync(httpContext, file, settings);
        }
    }

    private FileVersion? OpenAbsolute()
    {
        try
        {
            return FileVersion.Open(FileName, contentEncoding: null);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException && !DescriptorExhaustion.Is(ex))
        {
            return null;
        }
    }

    private FileVersion? OpenUnderRoot(IServiceProvider? services)
    {
        // Route values arrive decoded (except %2F) with their leading slash stripped; the checks are the middleware's.
        string subpath = FileName.StartsWith('/') ? FileName : "/" + FileName;
        if (!PathSafety.IsServable(subpath, ServeDotFiles))
        {
            return null;
        }

        RootSources? sources = services?.GetService<IOptions<RootSources>>()?.Value;
        PhysicalFileSource source = sources?.For(RootDirectory!, FollowSymlinksOutsideRoot) ?? new PhysicalFileSource(RootDirectory!, FollowSymlinksOutsideRoot);
        return source.TryOpen(subpath, contentEncoding: null, out FileVersion? file) == LookupResult.File
            ? file
            : null;
    }

    /// <summary>
    /// One file source per root, so the root's real path is resolved once, not per request; one set per application,
    /// carried by its container (the host registers <c>IOptions&lt;&gt;</c> for every type).
    /// </summary>
    internal sealed class RootSources
    {
        // Roots are normally a handful of constants; past this many, sources are made per request instead of kept.
        private const int MaxKept = 64;
        private readonly System.Collections.Concurrent.ConcurrentDictionary<(string Root, bool Follow), PhysicalFileSource> _sources = new();

        public PhysicalFileSource For(string root, bool followLinksOutsideRoot)
        {
            if (_sources.TryGetValue((root, followLinksOutsideRoot), out PhysicalFileSource? source))
            {
                return source;
            }

            source = new PhysicalFileSource(root, followLinksOutsideRoot);
            return _sources.Count < MaxKept ? _sources.GetOrAdd((root, followLinksOutsideRoot), source) : source;
        }
    }
}
