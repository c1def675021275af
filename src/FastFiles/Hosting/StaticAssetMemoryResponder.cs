using System.Collections.Concurrent;
using System.Globalization;
using System.Security.Cryptography;
using FastFiles.Diagnostics;
using FastFiles.Files;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.StaticAssets;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Net.Http.Headers;

namespace FastFiles.Hosting;

/// <summary>
/// Answers a <c>MapStaticAssets</c> endpoint's unconditional full GETs from memory, with exactly the headers
/// MapStaticAssets sends for them (aspnetcore <c>StaticAssetsInvoker</c>: Content-Type, Last-Modified, ETag,
/// Accept-Ranges, then the manifest's other headers in order, and Content-Length); every other request (HEAD,
/// ranges, conditionals, files over <c>MaxCachedFileSize</c>) goes to the endpoint itself. The manifest fixes an
/// asset's length and ETag at build time (MapStaticAssets assumes build-time immutability and never revalidates), so
/// its bytes are read once, on first use, and kept only when they are the bytes the manifest describes: the manifest's
/// strong ETag is the base64 SHA-256 of the content, checked here. One that no longer matches when first read is left
/// to the endpoint (MapStaticAssets' own behaviour) and named in a warning, and so is one replaced after that, once
/// seen (a stat at most once per <c>FileCacheRevalidationInterval</c>): the endpoint answers ranges and conditionals
/// from the file as it is now, so full bodies must too. Not used while MapStaticAssets
/// reloads changed assets at run time (aspnetcore's <c>StaticAssetDevelopmentRuntimeHandler</c>: on for a build's
/// manifest, or as <c>ReloadStaticAssetsAtRuntime</c> says), since it then answers with the file as it is now.
/// </summary>
internal sealed class StaticAssetMemoryResponder
{
    private readonly RequestDelegate _next;
    private readonly StaticAssetDescriptor _asset;
    private readonly string? _contentType;
    // MapStaticAssets sends a date even for a manifest without Last-Modified (its default, 0001-01-01).
    private readonly string _lastModified = HeaderUtilities.FormatDate(default);
    private readonly string? _etag;
    private readonly long _length = -1;
    private readonly List<KeyValuePair<string, string>> _headers = [];
    // Verified bytes by (asset path, ETag), shared by the endpoints of one WithFastFiles call: an asset has several routes
    // (fingerprinted and plain, and a compressed file is also selected by Content-Encoding), one copy serves them all.
    private readonly ConcurrentDictionary<(string AssetPath, string ETag), byte[]> _shared;
    private byte[]? _bytes;
    private int _state; // 0: not read yet, 1: in memory, -1: served by the endpoint

    // The file the bytes were read from, its stamp then, and when it was last seen unchanged (Environment.TickCount64).
    private string? _path;
    private FileStamp _stamp;
    private long _validatedAt;
    private long _revalidateAfterMs;
    private ILogger? _logger;

    private StaticAssetMemoryResponder(RequestDelegate next, StaticAssetDescriptor asset, ConcurrentDictionary<(string, string), byte[]> shared)
    {
        _next = next;
        _asset = asset;
        _shared = shared;
        EntityTagHeaderValue? etag = null;
        foreach (StaticAssetResponseHeader header in asset.ResponseHeaders)
        {
            switch (header.Name)
            {
                case "Content-Type":
                    _contentType = header.Value;
                    break;
                case "ETag" when etag is null || etag.IsWeak:
                    // As MapStaticAssets: a strong tag wins over an earlier weak one, which is then sent as a plain header.
                    if (etag is not null)
                    {
                        _headers.Add(new("ETag", etag.ToString()));
                    }

                    etag = EntityTagHeaderValue.Parse(header.Value);
                    break;
                case "Last-Modified":
                    _lastModified = HeaderUtilities.FormatDate(DateTimeOffset.Parse(header.Value, CultureInfo.InvariantCulture));
                    break;
                case "Content-Length":
                    _length = long.Parse(header.Value, CultureInfo.InvariantCulture);
                    break;
                default:
                    _headers.Add(new(header.Name, header.Value));
                    break;
            }
        }

        _etag = etag?.ToString();
    }

    /// <param name="next">The endpoint's request delegate.</param>
    /// <param name="asset">The endpoint's asset.</param>
    /// <param name="shared">Verified bytes shared with the other endpoints of the same <c>WithFastFiles</c> call.</param>
    public static RequestDelegate Wrap(RequestDelegate next, StaticAssetDescriptor asset, ConcurrentDictionary<(string, string), byte[]> shared)
        => new StaticAssetMemoryResponder(next, asset, shared).Invoke;

    /// <summary>The bytes this endpoint answers from, once read (for tests).</summary>
    internal static byte[]? BytesOf(RequestDelegate endpoint) => (endpoint.Target as StaticAssetMemoryResponder)?._bytes;

    /// <summary>
    /// Whether an endpoint's delegate is MapStaticAssets' own (aspnetcore <c>StaticAssetEndpointFactory</c> sets
    /// <c>StaticAssetsInvoker.Invoke</c>) and nothing wraps it: an app's convention, or the runtime reload handler's.
    /// </summary>
    public static bool IsStaticAssetsInvoker(Delegate endpoint)
        => endpoint.Target?.GetType().FullName == "Microsoft.AspNetCore.StaticAssets.StaticAssetsInvoker" && endpoint.Method.Name == "Invoke";

    /// <summary>
    /// As aspnetcore's <c>StaticAssetDevelopmentRuntimeHandler.IsEnabled</c>: <c>ReloadStaticAssetsAtRuntime</c> when
    /// set, else on for a build's manifest. The manifest's type is read from the default manifest (the one
    /// <c>MapStaticAssets()</c> loads without a path). A second look: when the handler is on, it wraps every endpoint, so
    /// <see cref="IsStaticAssetsInvoker"/> already kept this responder off.
    /// </summary>
    private static bool ReloadsAtRuntime(IServiceProvider services, IWebHostEnvironment? environment)
    {
        if (bool.TryParse(services.GetService<IConfiguration>()?["ReloadStaticAssetsAtRuntime"], out bool configured))
        {
            return configured;
        }

        return environment is not null && DefaultManifestIsBuild(environment.ApplicationName);
    }

    private static readonly System.Collections.Concurrent.ConcurrentDictionary<string, bool> BuildManifests = new(StringComparer.Ordinal);

    private static bool DefaultManifestIsBuild(string applicationName)
        => BuildManifests.GetOrAdd(Path.Combine(AppContext.BaseDirectory, applicationName + ".staticwebassets.endpoints.json"), static path =>
        {
            try
            {
                // "ManifestType" comes before the endpoints; reading the start of the file is enough.
                using FileStream stream = File.OpenRead(path);
                byte[] head = new byte[4096];
                int read = stream.ReadAtLeast(head, head.Length, throwOnEndOfStream: false);
                string text = System.Text.Encoding.UTF8.GetString(head, 0, read);
                return System.Text.RegularExpressions.Regex.IsMatch(text, "\"ManifestType\"\\s*:\\s*\"Build\"", System.Text.RegularExpressions.RegexOptions.IgnoreCase);
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
            {
                return false;
            }
        });

    private Task Invoke(HttpContext context)
    {
        // Every request looks (at most once per FileCacheRevalidationInterval) at whether the file is still the one read:
        // ranges, HEAD and conditionals go to the endpoint, which reads the file as it is now, so bytes from memory
        // after a replacement would mix two versions under one strong ETag in a resumed download.
        if (_state > 0 && !StillCurrent())
        {
            return _next(context);
        }

        // A body a middleware above has replaced (response compression, output caching) gets the endpoint's own writes:
        // one write and flush from here would not give the bytes that middleware makes of MapStaticAssets' copy.
        if (_state < 0 || !IsUnconditionalGet(context.Request) || (_bytes ?? Load(context.RequestServices)) is not { } bytes
            || context.Features.Get<Microsoft.AspNetCore.Http.Features.IHttpResponseBodyFeature>() is not { } body || !FastFiles.IO.KestrelFeatures.IsKestrelBody(body))
        {
            return _next(context);
        }

        HttpResponse response = context.Response;
        if (_contentType is not null)
        {
            response.ContentType = _contentType;
        }

        IHeaderDictionary headers = response.Headers;
        headers.LastModified = _lastModified;
        headers.ETag = _etag;
        headers.AcceptRanges = "bytes";
        foreach (KeyValuePair<string, string> header in _headers)
        {
            headers.Append(header.Key, header.Value);
        }

        response.ContentLength = _length;
        // Longer than one copy batch (MaxCachedFileSize raised past its 64 KiB default): in flushed batches, as
        // FileResponder sends cached bodies, so a client that does not read holds a batch in Kestrel's output, not the
        // asset. Up to 64 KiB, one write on every protocol: 16 KiB writes over HTTP/2 measured 0.92x at 64 KiB
        // (benchmarks/results/review-fixes-2026-11-28/staticassets-16k; one write: 0.99x, staticassets).
        return bytes.Length <= FastFiles.IO.FileBodyWriter.FlushThreshold
            ? response.BodyWriter.WriteAsync(bytes, context.RequestAborted).AsTask()
            : FastFiles.Responses.FileResponder.WriteInBatchesAsync(
                response.BodyWriter, bytes, FastFiles.Responses.FileResponder.MemoryBatchSize(context.Request.Protocol), context.RequestAborted).AsTask();
    }

    // MapStaticAssets evaluates preconditions and ranges for anything else; a plain GET is always its 200.
    private static bool IsUnconditionalGet(HttpRequest request)
    {
        if (!HttpMethods.IsGet(request.Method))
        {
            return false;
        }

        IHeaderDictionary headers = request.Headers;
        return headers.Range.Count == 0 && headers.IfMatch.Count == 0 && headers.IfNoneMatch.Count == 0
            && headers.IfModifiedSince.Count == 0 && headers.IfUnmodifiedSince.Count == 0 && headers.IfRange.Count == 0;
    }

    // The build writes each asset's strong ETag as "<base64 SHA-256 of its bytes>" (the integrity hash).
    private bool MatchesEntityTag(byte[] bytes)
    {
        Span<byte> hash = stackalloc byte[SHA256.HashSizeInBytes];
        SHA256.HashData(bytes, hash);
        string expected = "\"" + Convert.ToBase64String(hash) + "\"";
        return string.Equals(_etag, expected, StringComparison.Ordinal);
    }

    /// <summary>
    /// False, and the bytes dropped for good, once the file is no longer the one they were read from (another inode,
    /// length or modification or change time): from then on MapStaticAssets answers everything from the file, as it
    /// does for a file changed before first use, so full bodies and ranges agree.
    /// </summary>
    private bool StillCurrent()
    {
        long now = Environment.TickCount64;
        if (now - Volatile.Read(ref _validatedAt) < _revalidateAfterMs)
        {
            return true;
        }

        if (FileStamp.TryGet(_path!, out FileStamp current) && current == _stamp)
        {
            Volatile.Write(ref _validatedAt, now);
            return true;
        }

        lock (this)
        {
            if (_state > 0)
            {
                _state = -1;
                _bytes = null;
                Log.StaticAssetChanged(_logger!, _asset.Route, _asset.AssetPath);
            }
        }

        return false;
    }

    private byte[]? Load(IServiceProvider services)
    {
        lock (this)
        {
            if (_state != 0)
            {
                return _bytes;
            }

            _state = -1;
            FastFilesOptions options = FastFilesConfiguration.FastFilesOptions(services);
            IWebHostEnvironment? environment = services.GetService<IWebHostEnvironment>();
            // Only a strong ETag in the build's SHA-256 form ("<44 base64 characters>") lets the bytes be checked.
            // Without a Content-Length in the manifest there is nothing to check the file against (and none to send).
            if (!options.EnableFileCache || ReloadsAtRuntime(services, environment) || _length < 0 || _length > options.LargestCachedBody || _etag is not { Length: 46 } || _etag[0] != '"'
                || environment?.WebRootFileProvider.GetFileInfo(_asset.AssetPath) is not { Exists: true, PhysicalPath: { } path } file)
            {
                return null;
            }

            byte[]? bytes;
            FileStamp before = default, after = default;
            try
            {
                // The stamp before and after the read: bytes of a file written meanwhile are not kept.
                bytes = file.Length == _length && FileStamp.TryGet(path, out before) ? File.ReadAllBytes(path) : null;
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
            {
                // Gone or unreadable now: the endpoint answers as it would without FastFiles (and tries again itself).
                return null;
            }

            _logger = services.GetService<ILoggerFactory>()?.CreateLogger("FastFiles.Hosting") ?? NullLogger.Instance;
            if (bytes is null || bytes.LongLength != _length || !MatchesEntityTag(bytes) || !FileStamp.TryGet(path, out after) || after != before)
            {
                Log.StaticAssetChanged(_logger, _asset.Route, _asset.AssetPath);
                return null;
            }

            // Any bytes under this path and ETag have this SHA-256: the ones another route read first serve here too.
            bytes = _shared.GetOrAdd((_asset.AssetPath, _etag), bytes);
            _path = path;
            _stamp = before;
            _revalidateAfterMs = Math.Max(0, (long)options.FileCacheRevalidationInterval.TotalMilliseconds);
            _validatedAt = Environment.TickCount64;
            _bytes = bytes;
            _state = 1;
            return bytes;
        }
    }
}
