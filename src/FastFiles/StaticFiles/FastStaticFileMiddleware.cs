using FastFiles.Caching;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using FastFiles.Responses;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Primitives;

namespace FastFiles.StaticFiles;

/// <summary>
/// The static-file middleware behind <c>UseFastFiles</c>: GET and HEAD for files under a root, everything else
/// (other methods, other paths, unknown types, missing files) passes to the next middleware.
/// </summary>
internal sealed class FastStaticFileMiddleware : IDisposable
{
    private readonly RequestDelegate _next;
    private readonly FastStaticFileOptions _options;
    private readonly FileSource _source;
    private readonly StaticFilePolicy _policy;
    private readonly FileResponder _responder;
    private readonly ILogger _logger;
    private readonly FileCache? _cache;
    private readonly FileCacheLease? _cacheLease;
    private readonly string _requestPathValue;
    private readonly FastFilesFingerprinter? _fingerprinter;

    public FastStaticFileMiddleware(
        RequestDelegate next,
        IWebHostEnvironment environment,
        IOptions<FastStaticFileOptions> options,
        IOptions<FastFilesOptions> fastFilesOptions,
        ILoggerFactory loggerFactory,
        IServiceProvider services)
    {
        _next = next;
        _options = options.Value;
        _logger = loggerFactory.CreateLogger("FastFiles.StaticFiles");
        _policy = _options.CreatePolicy();
        FastFilesOptions fast = fastFilesOptions.Value;
        _responder = FileResponder.Create(services, fast, _logger);
        _requestPathValue = _options.RequestPath.Value ?? string.Empty;

        IFileProvider provider = _options.FileProvider ?? environment.WebRootFileProvider
            ?? throw new InvalidOperationException("UseFastFiles needs a FileProvider or a web root (wwwroot).");
        if (_options.FileProvider is null && provider is NullFileProvider)
        {
            // The host puts an empty provider where wwwroot is missing, and leaves WebRootPath unset when that is the default
            // one: name where it was looked for. UseStaticFiles warns of it the same way.
            Log.WebRootNotFound(_logger, environment.WebRootPath ?? Path.Combine(environment.ContentRootPath, "wwwroot"));
        }
        _source = provider is PhysicalFileProvider physical
            ? new PhysicalFileSource(physical.Root, _options.FollowSymlinksOutsideRoot)
            : new ProviderFileSource(provider);

        if (fast.EnableFileCache && _source is PhysicalFileSource physicalSource)
        {
            FastFilesMetrics metrics = FastFilesMetrics.For(services);
            // Shared with a static lane root over the same root and options (the sample's setup): HTTP/2 requests and
            // the lane's hand-offs reach this middleware for the files the lane holds, and one copy serves both.
            var key = new SharedFileCaches.Key(
                physicalSource.Root, _options.FollowSymlinksOutsideRoot, _requestPathValue, _options.EnablePrecompressedFiles,
                _options.EnableContentHashETags, _options.ServeDotFiles, _options, fast);
            _cacheLease = SharedFileCaches.Acquire(services, key, () => new FileCache(
                physicalSource, _requestPathValue, fast, metrics, loggerFactory.CreateLogger("FastFiles.Caching"), _options.EnableContentHashETags,
                _options.CreateCompressionPolicy(fast)));
            _cache = _cacheLease.Cache;
            FastFiles.Caching.FastFilesResources.Hold(services, this);
            if (_options.EnableContentHashETags)
            {
                _fingerprinter = services.GetService<FastFilesFingerprinter>();
                _fingerprinter?.Register(this);
            }
        }
    }

    /// <summary>The URL prefix this root serves, as configured.</summary>
    internal string RequestPathValue => _requestPathValue;

    /// <summary>The cache behind this middleware, when it has one (tests and diagnostics).</summary>
    internal FileCache? Cache => _cache;

    public void Dispose()
    {
        _fingerprinter?.Unregister(this);
        _cacheLease?.Dispose();
    }

    /// <summary>
    /// The content-hash tag of the file <paramref name="path"/> names under this root, from (or into) the cache;
    /// <see langword="null"/> when this root would not serve it. Without <paramref name="wait"/>, completes at once
    /// (null while a large file's hash is computed).
    /// </summary>
    internal async ValueTask<string?> ContentTagAsync(string path, bool wait, CancellationToken cancellationToken)
    {
        if (_cache is null
            || !new PathString(path).StartsWithSegments(_options.RequestPath, StringComparison.OrdinalIgnoreCase, out PathString remaining)
            || remaining.Value is not { Length: > 1 } subpath
            || subpath[^1] == '/'
            || !PathSafety.IsServable(subpath, _options.ServeDotFiles)
            || !_policy.TryGetContentType(subpath, out string? contentType))
        {
            return null;
        }

        // Keyed like a request whose prefix matched with its configured case, without empty segments.
        subpath = PathSafety.CollapseSlashes(subpath);
        string key = _requestPathValue + subpath;
        // Not a request: fastfiles.cache.hits and .misses count requests only.
        CachedFile? entry = _cache.TryGet(key, out CachedFile? found, counted: false) ? found
            : _cache.Build(key, subpath, _policy.SettingsFor(subpath, contentType), _options.EnablePrecompressedFiles, counted: false);
        if (entry?.Identity.ContentHash is not { } hash)
        {
            return null;
        }

        // As a request waits (a hash stopped by someone else is done again), throwing when the caller gives up.
        if (hash.ETag is null && wait && !await hash.WhenNeededByAsync(cancellationToken))
        {
            cancellationToken.ThrowIfCancellationRequested();
        }

        return hash.ETag;
    }

    public Task Invoke(HttpContext context)
    {
        // As UseStaticFiles: a matched endpoint wins.
        if (context.GetEndpoint()?.RequestDelegate is not null)
        {
            return _next(context);
        }

        string method = context.Request.Method;
        if (!HttpMethods.IsGet(method) && !HttpMethods.IsHead(method))
        {
            return _next(context);
        }

        // The hot path: a cached entry under the exact request path (Kestrel hands out the same path string for a
        // repeated target on a connection), with no sub-path string, no file-system call, no allocation.
        string? pathValue = context.Request.Path.Value;
        if (_cache is not null && pathValue is not null && _cache.TryGet(pathValue, out CachedFile? entry))
        {
            return ServeCachedAsync(context, _responder.ReadRequest(context), entry);
        }

        if (!context.Request.Path.StartsWithSegments(_options.RequestPath, StringComparison.OrdinalIgnoreCase, out PathString remaining))
        {
            return _next(context);
        }

        string subpath = remaining.HasValue ? remaining.Value! : "/";
        if (!PathSafety.IsServable(subpath, _options.ServeDotFiles))
        {
            Log.PathRejected(_logger, subpath);
            return _next(context);
        }

        // "/static" (the RequestPath itself) names the root directory without its trailing slash, as does an empty path
        // under a path base (app.Map("/docs", ...) for "/docs"). Empty segments name the same file as without them: one
        // sub-path, so one cache entry, per file.
        return ServeAsync(context, _responder.ReadRequest(context), PathSafety.CollapseSlashes(subpath), rootWithoutSlash: !remaining.HasValue);
    }

    // The one place a stale cached version is retried.
    private async Task ServeCachedAsync(HttpContext context, FileRequest request, CachedFile entry)
    {
        FileResponseSettings settings = entry.Settings;
        if (_fingerprinter is not null && context.Request.QueryString.HasValue
            && RequestedFingerprint(context.Request.QueryString.Value) is { } requested)
        {
            ContentHash? hash = entry.Identity.ContentHash;
            if (hash is { ETag: null } && !await hash.WhenNeededByAsync(context.RequestAborted))
            {
                // The client left while its file was hashed: nothing to answer.
                return;
            }

            if (hash?.ETag is { } current)
            {
                if (!FastFilesFingerprinter.Names(requested, current))
                {
                    // A stale hash: never the new bytes as immutable under the old URL; send the client to the current
                    // one (RFC 9110 15.4.3), and let nobody cache the redirect for long.
                    HttpRequest httpRequest = context.Request;
                    context.Response.StatusCode = StatusCodes.Status302Found;
                    context.Response.Headers.Location = FastFilesFingerprinter.Redirect(httpRequest.PathBase + httpRequest.Path, httpRequest.QueryString.Value!, current);
                    context.Response.Headers.CacheControl = "no-cache";
                    Log.StaleFingerprint(_logger, entry.Settings.LogName);
                    return;
                }

                settings = settings with { CacheControl = FastStaticFileOptions.ImmutableCacheControl };
            }
        }

        FileVersion selected = _cache!.Select(entry, request);
        try
        {
            if (await _responder.SendAsync(context, request, selected, settings))
            {
                return;
            }
        }
        catch (IOException ex) when (DescriptorExhaustion.Is(ex) && !context.Response.HasStarted)
        {
            UnavailableResponse.Send(context, _logger, entry.Settings.LogName, ex);
            return;
        }

        // The file changed after the entry was validated and before its bytes were read: nothing has been
        // written yet, so drop the entry and answer from what is on disk now.
        _cache!.Remove(entry);
        await ServeAsync(context, request, entry.Settings.LogName, useCache: false);
    }

    private static string? RequestedFingerprint(string? queryString)
    {
        ReadOnlySpan<char> requested = FastFilesFingerprinter.Requested(queryString);
        return requested.IsEmpty ? null : requested.ToString();
    }

    private async Task ServeAsync(HttpContext context, FileRequest request, string subpath, bool rootWithoutSlash = false, bool useCache = true)
    {
        try
        {
            await ServeCoreAsync(context, request, subpath, rootWithoutSlash, useCache);
        }
        catch (IOException ex) when (DescriptorExhaustion.Is(ex) && !context.Response.HasStarted)
        {
            // Every open happens before the headers; nothing of this response has been written.
            UnavailableResponse.Send(context, _logger, subpath, ex);
        }
    }

    private async Task ServeCoreAsync(HttpContext context, FileRequest request, string subpath, bool rootWithoutSlash, bool useCache)
    {
        // Entries are keyed by the prefix in its configured case and the sub-path without empty segments: the hot path
        // finds a request in that form with no string made; any other form of the same file (the prefix in another
        // case, "//") shares its entry from here, so one file has one entry, which the watcher drops by its path.
        // A directory's first default file is cached under the directory's path (a later name in DefaultFileNames is
        // looked up on disk each time, since an earlier one appearing would take its place).
        string? file = subpath[^1] != '/' ? subpath : FirstDefaultFile(subpath);
        if (useCache && _cache is not null && !rootWithoutSlash && file is not null
            && _policy.TryGetContentType(file, out string? cachedType))
        {
            string? path = context.Request.Path.Value;
            bool canonical = path is not null && path.Length == _requestPathValue.Length + subpath.Length
                && path.StartsWith(_requestPathValue, StringComparison.Ordinal) && path.EndsWith(subpath, StringComparison.Ordinal);
            string key = canonical ? path! : _requestPathValue + subpath;
            CachedFile? entry = !canonical && _cache.TryGet(key, out CachedFile? found) ? found
                : _cache.Build(key, file, _policy.SettingsFor(file, cachedType), _options.EnablePrecompressedFiles);
            if (entry is not null)
            {
                await ServeCachedAsync(context, request, entry);
                return;
            }
        }

        switch (Resolve(ref subpath, rootWithoutSlash, out FileVersion? identity, out string? contentType))
        {
            case Resolution.NotOurs:
                await _next(context);
                return;
            case Resolution.Redirect:
                // RFC 9110 15.4.2; relative links in the page need the trailing slash.
                HttpRequest httpRequest = context.Request;
                context.Response.StatusCode = StatusCodes.Status301MovedPermanently;
                // Without empty segments: "//host" would send the browser to another host (RFC 3986 4.2); each segment
                // escaped in full, so a directory named "q%3Fx" is not sent to "q?x".
                context.Response.Headers.Location = PathSafety.EscapeForLocation((httpRequest.PathBase + httpRequest.Path).Value!) + "/" + httpRequest.QueryString;
                return;
        }

        // Resolution.File: the version is open and the content type known.
        FileVersion opened = identity!;
        FileVersion? selected = null;
        try
        {
            ContentCodings available = _options.EnablePrecompressedFiles ? ProbeSidecars(subpath) : ContentCodings.None;
            selected = opened;
            // The best acceptable sidecar that can stand for the file: a stale or vanished one gives way to the next, as
            // a cached entry (which holds only fresh sidecars) would choose.
            AcceptEncoding accept = available != ContentCodings.None ? request.AcceptEncoding() : default;
            for (ContentCodings candidates = available; candidates != ContentCodings.None;)
            {
                ContentCodings choice = accept.Select(candidates);
                if (choice == ContentCodings.None)
                {
                    break;
                }

                candidates &= ~choice;
                (_, string suffix, string token, _) = Sidecar.All[Sidecar.IndexOf(choice)];
                if (_source.TryOpen(subpath + suffix, token, out FileVersion? variant) == LookupResult.File)
                {
                    if (Sidecar.IsFresh(variant!, opened))
                    {
                        selected = variant!;
                        break;
                    }

                    variant!.Dispose();
                }
            }

            if (_options.EnableContentHashETags && selected.PhysicalPath is not null)
            {
                // Not cached: the hash is computed only if a condition needs it, so the tag is the same as a cached one.
                selected.UseContentHash(ContentHash.ForRequests(selected.PhysicalPath, selected.Stamp));
            }

            // As a cached entry's: a file dynamic compression would compress varies too, though no variant exists here.
            bool vary = available != ContentCodings.None || _cache?.Compresses(contentType, opened.Length) == true;
            FileResponseSettings settings = _policy.SettingsFor(subpath, contentType!) with { VaryAcceptEncoding = vary };
            await _responder.SendAsync(context, request, selected, settings);
        }
        finally
        {
            if (selected is not null && !ReferenceEquals(selected, opened))
            {
                selected.Dispose();
            }

            opened.Dispose();
        }
    }

    /// <summary>What a request path names under this root, decided once before anything is written.</summary>
    private enum Resolution
    {
        /// <summary>Nothing this middleware serves: the next middleware answers.</summary>
        NotOurs,

        /// <summary>A directory with a default file, named without its trailing slash: 301 to the slashed URL.</summary>
        Redirect,

        /// <summary>A file of a known content type, opened.</summary>
        File,
    }

    // Resolves on disk: a file (opened, with its content type), a directory's default file (subpath becomes the file's),
    // a directory to redirect, or not ours. Only File leaves a version open.
    private Resolution Resolve(ref string subpath, bool rootWithoutSlash, out FileVersion? identity, out string? contentType)
    {
        identity = null;
        contentType = null;
        bool directory = rootWithoutSlash || subpath[^1] == '/';
        if (!directory)
        {
            LookupResult found = LookupResult.NotFound;
            if (_policy.TryGetContentType(subpath, out contentType))
            {
                found = _source.TryOpen(subpath, null, out identity);
            }
            else if (_options.DefaultFileNames.Count == 0)
            {
                // Unknown types are still looked up when default files may apply to a directory.
                Log.UnknownContentType(_logger, subpath);
                return Resolution.NotOurs;
            }

            if (found == LookupResult.File)
            {
                return Resolution.File;
            }

            identity?.Dispose();
            identity = null;
            if (_options.DefaultFileNames.Count == 0
                || !(found == LookupResult.Directory || (found == LookupResult.NotFound && _source.DirectoryExists(subpath))))
            {
                return Resolution.NotOurs;
            }

            // A directory named without its trailing slash.
            if (_options.RedirectToAppendTrailingSlash)
            {
                return RedirectIfDefaultFile(subpath + "/");
            }

            // As UseDefaultFiles without its redirect: the directory's default file answers at this URL.
            subpath += "/";
        }

        if (_options.DefaultFileNames.Count == 0)
        {
            return Resolution.NotOurs;
        }

        if (rootWithoutSlash && _options.RedirectToAppendTrailingSlash)
        {
            return RedirectIfDefaultFile("/");
        }

        if (FindDefaultFile(subpath, out identity) is not { } defaultPath)
        {
            return Resolution.NotOurs;
        }

        if (!_policy.TryGetContentType(defaultPath, out contentType))
        {
            Log.UnknownContentType(_logger, defaultPath);
            identity!.Dispose();
            identity = null;
            return Resolution.NotOurs;
        }

        subpath = defaultPath;
        return Resolution.File;
    }

    // A directory named without its trailing slash is redirected to the slashed URL only when it has a default file.
    private Resolution RedirectIfDefaultFile(string directoryPath)
    {
        if (FindDefaultFile(directoryPath, out FileVersion? probe) is not null)
        {
            probe!.Dispose();
            return Resolution.Redirect;
        }

        return Resolution.NotOurs;
    }

    private string? FirstDefaultFile(string directoryPath)
        => _options.DefaultFileNames.Count > 0 && PathSafety.IsServable(directoryPath + _options.DefaultFileNames[0], _options.ServeDotFiles)
            ? directoryPath + _options.DefaultFileNames[0]
            : null;

    private string? FindDefaultFile(string directoryPath, out FileVersion? version)
    {
        foreach (string name in _options.DefaultFileNames)
        {
            string candidate = directoryPath + name;
            if (PathSafety.IsServable(candidate, _options.ServeDotFiles)
                && _source.TryOpen(candidate, null, out version) == LookupResult.File)
            {
                return candidate;
            }
        }

        version = null;
        return null;
    }

    private ContentCodings ProbeSidecars(string subpath)
    {
        ContentCodings available = ContentCodings.None;
        foreach ((ContentCodings coding, string suffix, _, _) in Sidecar.All)
        {
            if (_source.FileExists(subpath + suffix))
            {
                available |= coding;
            }
        }

        return available;
    }
}
