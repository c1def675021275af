using System.Text;
using FastFiles.Caching;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;

namespace FastFiles.Connections;

/// <summary>
/// One public root handed to the static lane: its URL prefix, its <see cref="FileCache"/> (shared with a
/// <c>UseFastFiles</c> over the same root and options object, else its own), and the same
/// <see cref="StaticFilePolicy"/> <c>UseFastFiles</c> applies.
/// </summary>
internal sealed class StaticLaneRoot : IDisposable
{
    private readonly byte[] _prefix;
    private readonly string _requestPath;
    private readonly StaticFilePolicy _policy;
    private readonly bool _precompressed;
    private readonly bool _serverHeader;
    private readonly string? _defaultFile;
    private readonly FileCacheLease _cache;

    public StaticLaneRoot(
        string physicalPath, string requestPath, bool followSymlinksOutsideRoot, bool precompressed, StaticFilePolicy policy,
        FastFilesOptions fastFiles, bool serverHeader, FastFilesMetrics metrics, ILogger logger, CompressionPolicy? compression = null,
        string? defaultFile = null, bool contentHashETags = false, IServiceProvider? services = null, object? options = null)
    {
        string physical = Path.GetFullPath(physicalPath);
        if (!Directory.Exists(physical))
        {
            throw new DirectoryNotFoundException($"The static lane root '{physical}' does not exist.");
        }

        _requestPath = requestPath;
        if (!Ascii.IsValid(_requestPath) || _requestPath.EndsWith('/'))
        {
            throw new InvalidOperationException($"The static lane's RequestPath '{_requestPath}' must be ASCII and must not end with '/'.");
        }

        _prefix = Encoding.ASCII.GetBytes(_requestPath);
        _policy = policy;
        _precompressed = precompressed;
        _serverHeader = serverHeader;
        _defaultFile = defaultFile;
        FileCache Create()
            => new(new PhysicalFileSource(physical, followSymlinksOutsideRoot), _requestPath, fastFiles, metrics, logger, contentHashETags, compression);

        // With the options object UseFastFiles has (the application's), the root shares UseFastFiles' cache: the lane
        // never serves a dotfile, so it takes a middleware's cache only when that middleware serves none either.
        _cache = options is null
            ? FileCacheLease.Own(Create())
            : SharedFileCaches.Acquire(services, new SharedFileCaches.Key(
                Path.TrimEndingDirectorySeparator(physical), followSymlinksOutsideRoot, _requestPath, precompressed, contentHashETags,
                ServeDotFiles: false, options, fastFiles), Create);
    }

    public FileCache Cache => _cache.Cache;

    /// <summary>
    /// The prebuilt responses for <paramref name="path"/> (the request's path bytes, ASCII), building the cache entry
    /// on first use; false when the path is not under this root or names nothing the lane serves.
    /// </summary>
    /// <remarks>
    /// The lookup is not counted here (<paramref name="built"/> says which it was): a request the lane hands off is
    /// looked up again by the app's middleware, which counts it.
    /// </remarks>
    public bool TryResolve(ReadOnlySpan<byte> path, out CachedFile entry, out StaticLaneResponse[] responses, out bool built)
    {
        responses = [];
        built = false;
        entry = null!;
        // RFC 3986 6.2.2.1 would allow a case-insensitive prefix; UseFastFiles caches only the exact case, so the lane
        // takes only that and hands the rest to the app.
        if (!path.StartsWith(_prefix) || (path.Length > _prefix.Length && path[_prefix.Length] != (byte)'/') || path.Length == _prefix.Length)
        {
            return false;
        }

        Span<char> key = stackalloc char[path.Length];
        System.Text.Ascii.ToUtf16(path, key, out _);
        if (!Cache.TryGet(key, out entry, counted: false))
        {
            // A miss (first request, or the file changed): the only place strings are made. A directory is its first
            // default file, cached under the directory's path, as UseFastFiles does.
            // The same path checks as UseFastFiles (on Windows ':' names a drive or an alternate data stream, which the
            // parser lets through as a path byte), never relaxed for the lane.
            string subpath = new(key[_prefix.Length..]);
            string? file = subpath[^1] != '/' ? subpath : _defaultFile is not null ? subpath + _defaultFile : null;
            if (file is null
                || !PathSafety.IsServable(file, allowDotFiles: false)
                || !_policy.TryGetContentType(file, out string? contentType)
                || Cache.Build(new string(key), file, _policy.SettingsFor(file, contentType), _precompressed, counted: false) is not { } created)
            {
                return false;
            }

            entry = created;
            built = true;
        }

        // Dynamic compression adds variants to a live entry, and a large file's content hash is known some time after
        // its entry is built: responses built before either are built again.
        ContentCodings available = entry.Available;
        if (entry.Prebuilt is Prebuilt prebuilt && prebuilt.Available == available && (prebuilt.Tagged || !TagsArrived(prebuilt.Responses)))
        {
            responses = prebuilt.Responses;
            return true;
        }

        // Index 0 is the identity version, then one per coding; racing builders produce equal arrays.
        responses = new StaticLaneResponse[1 + entry.Variants.Length];
        responses[0] = new StaticLaneResponse(entry.Identity, entry.Settings, _serverHeader);
        for (int i = 0; i < entry.Variants.Length; i++)
        {
            responses[i + 1] = (available & Sidecar.All[i].Coding) != 0 && entry.Select(Sidecar.All[i].Coding) is { ContentEncoding: not null } variant
                ? new StaticLaneResponse(variant, entry.Settings, _serverHeader)
                : responses[0];
        }

        entry.Prebuilt = new Prebuilt(available, responses, Array.TrueForAll(responses, r => r.ETag is not null));
        return true;
    }

    // Whether a version whose response was built without its content-hash tag has it now.
    private static bool TagsArrived(StaticLaneResponse[] responses)
    {
        foreach (StaticLaneResponse response in responses)
        {
            if (response.ETag is null && response.Version.ETag is not null)
            {
                return true;
            }
        }

        return false;
    }

    public void Dispose() => _cache.Dispose();

    /// <summary>The responses built for an entry, which of its codings they cover, and whether every one carries its ETag.</summary>
    private sealed record Prebuilt(ContentCodings Available, StaticLaneResponse[] Responses, bool Tagged);
}
