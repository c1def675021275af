using System.Text.RegularExpressions;
using Microsoft.AspNetCore.StaticFiles;

namespace FastFiles.StaticFiles;

/// <summary>
/// What <see cref="FastStaticFileOptions"/> decide for one file, independent of the request: whether it is served
/// and with which content type, and its response settings (Cache-Control, immutable for fingerprinted names). Shared
/// by <c>UseFastFiles</c> and the static lane, so both answer the same file the same way.
/// </summary>
internal sealed class StaticFilePolicy
{
    private readonly FastStaticFileOptions _options;
    private readonly IContentTypeProvider _contentTypes;
    private readonly Regex? _fingerprint;

    public StaticFilePolicy(FastStaticFileOptions options)
    {
        _options = options;
        _contentTypes = options.ContentTypeProvider ?? new FileExtensionContentTypeProvider();
        _fingerprint = string.IsNullOrEmpty(options.FingerprintPattern)
            ? null
            : new Regex(options.FingerprintPattern, RegexOptions.CultureInvariant | RegexOptions.Compiled, TimeSpan.FromMilliseconds(100));
    }

    /// <summary>The content type for <paramref name="subpath"/>; false when unknown types are not served.</summary>
    public bool TryGetContentType(string subpath, out string? contentType)
    {
        if (_contentTypes.TryGetContentType(subpath, out contentType))
        {
            return true;
        }

        contentType = _options.DefaultContentType;
        return _options.ServeUnknownFileTypes;
    }

    public FileResponseSettings SettingsFor(string subpath, string? contentType) => new()
    {
        ContentType = contentType,
        CacheControl = _fingerprint is not null && _fingerprint.IsMatch(subpath) ? FastStaticFileOptions.ImmutableCacheControl : _options.CacheControl,
        EnableRangeProcessing = true,
        OnPrepareResponse = _options.OnPrepareResponse,
        LogName = subpath,
    };
}
