using FastFiles.Caching;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using FastFiles.Responses;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Microsoft.Net.Http.Headers;

namespace Microsoft.AspNetCore.Http;

/// <summary>
/// Sends a file from disk with FastFiles' semantics: strong ETag and Last-Modified (or the application's own,
/// <see cref="LastModified"/> and <see cref="EntityTag"/>), conditional requests
/// (304/412), byte ranges (206/416; several as multipart/byteranges, up to <see cref="FastFilesOptions.MaxRanges"/>),
/// HEAD, and an optional download name. Works as a minimal-API
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

    /// <summary>The directory <see cref="FileName"/> is relative to, for results made by <see cref="FastResults.File(string, string, string?, string?, bool, bool, bool, DateTimeOffset?, EntityTagHeaderValue?)"/>.</summary>
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
    /// <remarks>Defaults to <see langword="null"/>: no header (as does an empty or blank value).</remarks>
    public string? CacheControl { get; init; }

    /// <summary>
    /// With <see cref="RootDirectory"/>: whether a compressible file is also sent brotli- or gzip-encoded when the
    /// request's Accept-Encoding prefers it, exactly as <c>FastStaticFileOptions.EnableDynamicCompression</c> does for
    /// <c>UseFastFiles</c>: each file version compressed once in the background into a file cache for the root (shared by
    /// every result with the same root and options), sidecars (<c>file.br</c>, <c>file.gz</c>) on disk winning for their
    /// coding, <c>Vary: Accept-Encoding</c> on every response for the file, an ETag per coding, ranges and conditional
    /// requests over the encoded bytes. Compressible types and sizes are <c>UseFastFiles</c>' defaults
    /// (<c>FastStaticFileOptions.DefaultCompressibleContentTypes</c>, 1 KiB to 8 MiB), levels are
    /// <c>FastFilesOptions.BrotliCompressionQuality</c> and <c>FastFilesOptions.GzipCompressionLevel</c>.
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="false"/>, as in <c>UseFastFiles</c>. Needs the file cache
    /// (<c>FastFilesOptions.EnableFileCache</c>); results with an absolute path (no root) send the file as it is.
    /// </remarks>
    public bool EnableDynamicCompression { get; init; }

    /// <summary>
    /// With <see cref="RootDirectory"/>: whether the ETag is the content hash of the bytes sent (the first 128 bits of
    /// SHA-256, base64url), as <c>FastStaticFileOptions.EnableContentHashETags</c> makes it for <c>UseFastFiles</c>:
    /// computed once per file version by a file cache for the root, in the background for files over
    /// <c>FastFilesOptions.MaxCachedFileSize</c> (until then responses carry no ETag and entity-tag conditions wait for it).
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="false"/>, as in <c>UseFastFiles</c>: modification-time ETags. Results with an absolute
    /// path (no root) keep modification-time ETags.
    /// </remarks>
    public bool EnableContentHashETags { get; init; }

    /// <summary>
    /// The Last-Modified to send, and to evaluate If-Modified-Since, If-Unmodified-Since and date If-Range against,
    /// instead of the file's modification time (as <c>PhysicalFileResult.LastModified</c>); sent to the second
    /// (RFC 9110 5.6.7). A time later than the response's is replaced by one fixed for the process, a second before
    /// FastFiles first served a file (RFC 9110 8.8.2.1: never later than Date; the same for every response, so date
    /// conditions keep working).
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="null"/>: the file's modification time. An application's validators describe the file's
    /// own bytes, so a result with <see cref="LastModified"/> or <see cref="EntityTag"/> is never sent compressed and
    /// has no content-hash ETag, whatever <see cref="EnableDynamicCompression"/> and <see cref="EnableContentHashETags"/> say.
    /// </remarks>
    public DateTimeOffset? LastModified { get; init; }

    /// <summary>
    /// The ETag to send, and to evaluate If-Match, If-None-Match and If-Range against, instead of FastFiles' own (as
    /// <c>PhysicalFileResult.EntityTag</c>). A weak tag (<c>W/"..."</c>) matches If-None-Match only: If-Match and If-Range
    /// use the strong comparison (RFC 9110 8.8.3.2, 13.1.1, 13.1.5), so with a weak tag they fail (412) and send the
    /// whole file (200) respectively.
    /// </summary>
    /// <remarks>Defaults to <see langword="null"/>: a strong ETag from the file's modification time and length (or its content hash).</remarks>
    /// <exception cref="ArgumentException">
    /// The value is <c>*</c>, which names no representation, or its opaque tag holds a <c>"</c> (an escaped one, which
    /// <see cref="EntityTagHeaderValue"/> accepts as a quoted-string but an entity-tag cannot hold, RFC 9110 8.8.3): no
    /// If-None-Match, If-Match or If-Range could name it.
    /// </exception>
    public EntityTagHeaderValue? EntityTag
    {
        get => _entityTag;
        init
        {
            if (value is not null && value.Tag.Equals("*", StringComparison.Ordinal))
            {
                throw new ArgumentException("A response's entity tag cannot be '*'.", nameof(EntityTag));
            }

            // etagc (RFC 9110 8.8.3) has no DQUOTE: request lists are read from quote to quote, so such a tag never matches.
            if (value is not null && value.Tag.AsSpan()[1..^1].Contains('"'))
            {
                throw new ArgumentException($"{value.Tag} is not an entity-tag (RFC 9110 8.8.3): its opaque tag cannot hold a '\"'.", nameof(EntityTag));
            }

            _entityTag = value;
        }
    }

    private readonly EntityTagHeaderValue? _entityTag;

    // The application chose the validators: the response is the file's own bytes, from disk, with them.
    private bool ExplicitValidators => LastModified is not null || _entityTag is not null;

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
        RootSources? sources = services?.GetService<IOptions<RootSources>>()?.Value;
        (FileResponder responder, ILogger logger) = sources?.Responder(services!) ?? RootSources.CreateResponder(services);

        // Compression and content hashes are made once per file version, so they need the root's file cache.
        FileCache? cache = RootDirectory is not null && (EnableDynamicCompression || EnableContentHashETags) && !ExplicitValidators
            ? sources?.CacheFor(RootDirectory, FollowSymlinksOutsideRoot, EnableDynamicCompression, EnableContentHashETags, services!)
            : null;
        if (cache is not null && await TrySendCachedAsync(httpContext, cache, responder, logger))
        {
            return;
        }

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
            NotFound(httpContext, logger);
            return;
        }

        using (file)
        {
            if (ExplicitValidators)
            {
                file.UseValidators(LastModified, _entityTag?.ToString());
            }
            else if (RootDirectory is not null && EnableContentHashETags && file.PhysicalPath is not null)
            {
                // Not cached (no file cache, or its entry went stale): as UseFastFiles, the hash is computed only if a
                // condition needs it, so the tag is the cached one.
                file.UseContentHash(ContentHash.ForRequests(file.PhysicalPath, file.Stamp));
            }

            // As a cached entry's, and as UseFastFiles answers from disk: a file that has or will have variants varies by
            // Accept-Encoding on this response too (RFC 9110 12.5.5), though it is sent as it is.
            FileResponseSettings settings = Settings();
            if (EnableDynamicCompression && cache is not null)
            {
                settings = settings with { VaryAcceptEncoding = cache.VariesByEncoding(Subpath(), settings.ContentType, file.Length) };
            }

            await responder.SendAsync(httpContext, file, settings);
        }
    }

    // Answers from the root's file cache as UseFastFiles answers a cached file; false when the entry turned out stale
    // before anything was written (the caller then answers from what is on disk now).
    private async Task<bool> TrySendCachedAsync(HttpContext httpContext, FileCache cache, FileResponder responder, ILogger logger)
    {
        CachedFile? entry = null;
        try
        {
            if (!TryGetCached(cache, out entry, out bool servable) && servable)
            {
                // Sidecars are looked for only with compression: without it a result sends the file's own bytes.
                string subpath = Subpath();
                entry = cache.Build(subpath, subpath, Settings(), precompressed: EnableDynamicCompression);
            }

            if (entry is null)
            {
                NotFound(httpContext, logger);
                return true;
            }

            FileRequest request = responder.ReadRequest(httpContext);

            // The entry's Vary (it knows whether the file has or will have variants); everything else is this result's.
            FileResponseSettings settings = Settings() with { VaryAcceptEncoding = entry.Settings.VaryAcceptEncoding };
            if (await responder.SendAsync(httpContext, request, cache.Select(entry, request), settings))
            {
                return true;
            }
        }
        catch (IOException ex) when (DescriptorExhaustion.Is(ex) && !httpContext.Response.HasStarted)
        {
            UnavailableResponse.Send(httpContext, logger, FileName, ex);
            return true;
        }

        cache.Remove(entry);
        return false;
    }

    // The entry under "/" + FileName without making that string (a hit is the common case); the path is checked first,
    // as results with different ServeDotFiles share the root's cache.
    private bool TryGetCached(FileCache cache, out CachedFile? entry, out bool servable)
    {
        entry = null;
        bool slash = FileName.StartsWith('/');
        int length = FileName.Length + (slash ? 0 : 1);
        Span<char> key = length <= 512 ? stackalloc char[length] : new char[length];
        key[0] = '/';
        FileName.AsSpan().CopyTo(key[(slash ? 0 : 1)..]);
        // One entry per file: "a//b" is "a/b" (see PathSafety.CollapseSlashes), collapsed in place.
        key = key[..PathSafety.CollapseSlashes(key, key)];
        servable = PathSafety.IsServable(key, ServeDotFiles);
        return servable && cache.TryGet(key, out entry!);
    }

    private FileResponseSettings Settings()
    {
        string? disposition = null;
        if (!string.IsNullOrEmpty(FileDownloadName))
        {
            var header = new ContentDispositionHeaderValue("attachment");
            header.SetHttpFileName(FileDownloadName);
            disposition = header.ToString();
        }

        return new FileResponseSettings
        {
            ContentType = ContentType,
            // Empty or blank is no header, as for UseFastFiles.
            CacheControl = string.IsNullOrWhiteSpace(CacheControl) ? null : CacheControl,
            EnableRangeProcessing = EnableRangeProcessing,
            ContentDisposition = disposition,
            LogName = FileName,
            ReplacesAppStatus = true,
        };
    }

    private void NotFound(HttpContext httpContext, ILogger logger)
    {
        Log.FileNotFound(logger, FileName);
        httpContext.Response.StatusCode = StatusCodes.Status404NotFound;
    }

    // Route values arrive decoded (except %2F) with their leading slash stripped; the checks are the middleware's.
    private string Subpath() => PathSafety.CollapseSlashes(FileName.StartsWith('/') ? FileName : "/" + FileName);

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
        string subpath = Subpath();
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
        // Roots are normally a handful of constants; past this many, sources are made per request instead of kept, and
        // further roots get no file cache.
        private const int MaxKept = 64;
        private readonly System.Collections.Concurrent.ConcurrentDictionary<(string Root, bool Follow), PhysicalFileSource> _sources = new();
        private readonly System.Collections.Concurrent.ConcurrentDictionary<(string Root, bool Follow, bool Compress, bool Hash), FileCache?> _caches = new();
        private Tuple<FileResponder, ILogger>? _responder;

        /// <summary>The app's responder and results logger, made once per container (both depend only on it).</summary>
        public (FileResponder Responder, ILogger Logger) Responder(IServiceProvider services)
        {
            // A race makes two equal pairs; either is kept.
            Tuple<FileResponder, ILogger> made = _responder ??= CreateResponder(services).ToTuple();
            return (made.Item1, made.Item2);
        }

        public static (FileResponder Responder, ILogger Logger) CreateResponder(IServiceProvider? services)
        {
            ILogger logger = services?.GetService<ILoggerFactory>()?.CreateLogger("FastFiles.Results") ?? NullLogger.Instance;
            return (FileResponder.Create(services, options: null, logger), logger);
        }

        /// <summary>
        /// The file cache for results under <paramref name="root"/> with these options, made on first use and disposed
        /// when the app stops; <see langword="null"/> when the file cache is off (<c>FastFilesOptions.EnableFileCache</c>).
        /// </summary>
        public FileCache? CacheFor(string root, bool followLinksOutsideRoot, bool compress, bool contentHashETags, IServiceProvider services)
        {
            var key = (root, followLinksOutsideRoot, compress, contentHashETags);
            if (_caches.TryGetValue(key, out FileCache? cache))
            {
                return cache;
            }

            // Made under a lock: a second cache for the same root would watch and hold the same files twice.
            lock (_caches)
            {
                if (_caches.TryGetValue(key, out cache) || _caches.Count >= MaxKept)
                {
                    return cache;
                }

                // A root made from request data that names no directory (a tenant that does not exist) must not take one
                // of the places, with a watcher and a budget of its own: its results are 404s without a cache.
                if (!Directory.Exists(root))
                {
                    return null;
                }

                FastFilesOptions options = FastFilesOptionsSource.FastFilesOptions(services);
                if (options.EnableFileCache)
                {
                    CompressionPolicy? compression = compress
                        ? new CompressionPolicy(
                            CompressionPolicy.DefaultContentTypes, CompressionPolicy.DefaultMinimumSize, CompressionPolicy.DefaultMaximumSize,
                            options.BrotliCompressionQuality, options.GzipCompressionLevel)
                        : null;
                    ILogger logger = services.GetService<ILoggerFactory>()?.CreateLogger("FastFiles.Caching") ?? NullLogger.Instance;

                    // Keyed by the sub-path under the root (no URL prefix): the watcher maps changed files to those keys.
                    cache = new FileCache(For(root, followLinksOutsideRoot), string.Empty, options, FastFilesMetrics.For(services), logger, contentHashETags, compression);
                    FastFiles.Caching.FastFilesResources.Hold(services, cache);
                }

                _caches[key] = cache;
                return cache;
            }
        }

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
