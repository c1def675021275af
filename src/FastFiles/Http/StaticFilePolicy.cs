using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.StaticFiles;

namespace FastFiles.Http;

/// <summary>
/// What the static file options (<c>FastStaticFileOptions.CreatePolicy</c>) decide for one file, independent of the
/// request: whether it is served and with which content type, and its response settings (Cache-Control, immutable
/// for fingerprinted names). Shared by <c>UseFastFiles</c> and the static lane, so both answer a file the same way.
/// </summary>
internal sealed class StaticFilePolicy
{
    private readonly IContentTypeProvider _contentTypes;
    private readonly bool _serveUnknownFileTypes;
    private readonly string? _defaultContentType;
    private readonly string? _cacheControl;
    private readonly Func<string, bool>? _isFingerprinted;
    private readonly Action<FastFileResponseContext>? _onPrepareResponse;
    private readonly HttpsCompressionMode _httpsCompression;
    private readonly Func<FastFileResponseContext, Task>? _onPrepareResponseAsync;

    public StaticFilePolicy(
        IContentTypeProvider? contentTypes, bool serveUnknownFileTypes, string? defaultContentType, string? cacheControl,
        Func<string, bool>? isFingerprinted, Action<FastFileResponseContext>? onPrepareResponse,
        HttpsCompressionMode httpsCompression = HttpsCompressionMode.Compress, Func<FastFileResponseContext, Task>? onPrepareResponseAsync = null)
    {
        _httpsCompression = httpsCompression;
        _onPrepareResponseAsync = onPrepareResponseAsync;
        _contentTypes = contentTypes ?? new FileExtensionContentTypeProvider();
        _serveUnknownFileTypes = serveUnknownFileTypes;
        _defaultContentType = defaultContentType;
        _cacheControl = cacheControl;
        _onPrepareResponse = onPrepareResponse;
        _isFingerprinted = isFingerprinted;
    }

    /// <summary>The content type for <paramref name="subpath"/>; false when unknown types are not served.</summary>
    public bool TryGetContentType(string subpath, out string? contentType)
    {
        if (_contentTypes.TryGetContentType(subpath, out contentType))
        {
            return true;
        }

        contentType = _defaultContentType;
        return _serveUnknownFileTypes;
    }

    // The same value as FastStaticFileOptions.ImmutableCacheControl (that type is in a higher layer).
    private const string ImmutableCacheControl = "public, max-age=31536000, immutable";

    public FileResponseSettings SettingsFor(string subpath, string? contentType) => new()
    {
        ContentType = contentType,
        CacheControl = _isFingerprinted is not null && _isFingerprinted(subpath) ? ImmutableCacheControl : _cacheControl,
        EnableRangeProcessing = true,
        OnPrepareResponse = _onPrepareResponse,
        OnPrepareResponseAsync = _onPrepareResponseAsync,
        HttpsCompression = _httpsCompression,
        LogName = subpath,
    };
}
