using System.Text.RegularExpressions;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace FastFiles.StaticFiles;

/// <summary>
/// The static-file middleware behind <c>UseFastFiles</c>: GET and HEAD for files under a root, everything else
/// (other methods, other paths, unknown types, missing files) passes to the next middleware.
/// </summary>
internal sealed class FastStaticFileMiddleware
{
    private static readonly (ContentCodings Coding, string Suffix, string Token)[] Sidecars =
    [
        (ContentCodings.Brotli, ".br", "br"),
        (ContentCodings.Zstd, ".zst", "zstd"),
        (ContentCodings.Gzip, ".gz", "gzip"),
    ];

    private readonly RequestDelegate _next;
    private readonly FastStaticFileOptions _options;
    private readonly FileSource _source;
    private readonly IContentTypeProvider _contentTypes;
    private readonly Regex? _fingerprint;
    private readonly FileResponder _responder;
    private readonly ILogger _logger;

    public FastStaticFileMiddleware(
        RequestDelegate next,
        IWebHostEnvironment environment,
        IOptions<FastStaticFileOptions> options,
        IOptions<FastFilesOptions> fastFilesOptions,
        ILoggerFactory loggerFactory)
    {
        _next = next;
        _options = options.Value;
        _logger = loggerFactory.CreateLogger("FastFiles.StaticFiles");
        _contentTypes = _options.ContentTypeProvider ?? new FileExtensionContentTypeProvider();
        _fingerprint = string.IsNullOrEmpty(_options.FingerprintPattern)
            ? null
            : new Regex(_options.FingerprintPattern, RegexOptions.CultureInvariant | RegexOptions.Compiled, TimeSpan.FromMilliseconds(100));
        _responder = new FileResponder(fastFilesOptions.Value, _logger);

        IFileProvider provider = _options.FileProvider ?? environment.WebRootFileProvider
            ?? throw new InvalidOperationException("UseFastFiles needs a FileProvider or a web root (wwwroot).");
        _source = provider is PhysicalFileProvider physical
            ? new PhysicalFileSource(physical.Root, _options.FollowSymlinksOutsideRoot)
            : new ProviderFileSource(provider);
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

        // "/static" (the RequestPath itself) names the root directory without its trailing slash.
        return ServeAsync(context, subpath, rootWithoutSlash: !remaining.HasValue && _options.RequestPath.HasValue);
    }

    private async Task ServeAsync(HttpContext context, string subpath, bool rootWithoutSlash)
    {
        FileVersion? identity = null;
        FileVersion? selected = null;
        try
        {
            LookupResult found = LookupResult.NotFound;
            if (!rootWithoutSlash && subpath[^1] != '/')
            {
                if (!TryGetContentType(subpath, out _))
                {
                    // Unknown types are still looked up when default files may apply to a directory.
                    if (_options.DefaultFileNames.Count == 0)
                    {
                        Log.UnknownContentType(_logger, subpath);
                        await _next(context);
                        return;
                    }
                }
                else
                {
                    found = _source.TryOpen(subpath, null, out identity);
                }

                if (found == LookupResult.NotFound && _options.DefaultFileNames.Count > 0 && IsDirectory(subpath))
                {
                    found = LookupResult.Directory;
                }
            }
            else
            {
                found = LookupResult.Directory;
            }

            if (found == LookupResult.Directory)
            {
                if (_options.DefaultFileNames.Count == 0)
                {
                    await _next(context);
                    return;
                }

                if (rootWithoutSlash || subpath[^1] != '/')
                {
                    if (_options.RedirectToAppendTrailingSlash && FindDefaultFile(rootWithoutSlash ? "/" : subpath + "/", out FileVersion? probe) is not null)
                    {
                        probe!.Dispose();
                        // RFC 9110 15.4.2; relative links in the page need the trailing slash.
                        HttpRequest request = context.Request;
                        context.Response.StatusCode = StatusCodes.Status301MovedPermanently;
                        context.Response.Headers.Location = request.PathBase + request.Path + "/" + request.QueryString;
                        return;
                    }

                    await _next(context);
                    return;
                }

                string? defaultPath = FindDefaultFile(subpath, out identity);
                if (defaultPath is null)
                {
                    await _next(context);
                    return;
                }

                subpath = defaultPath;
            }

            if (identity is null)
            {
                await _next(context);
                return;
            }

            if (!TryGetContentType(subpath, out string? contentType))
            {
                Log.UnknownContentType(_logger, subpath);
                await _next(context);
                return;
            }

            ContentCodings available = _options.EnablePrecompressedFiles ? ProbeSidecars(subpath) : ContentCodings.None;
            selected = identity;
            if (available != ContentCodings.None)
            {
                ContentCodings choice = AcceptEncoding.Parse(context.Request.Headers.AcceptEncoding).Select(available);
                if (choice != ContentCodings.None)
                {
                    (_, string suffix, string token) = Sidecars[choice switch { ContentCodings.Brotli => 0, ContentCodings.Zstd => 1, _ => 2 }];
                    if (_source.TryOpen(subpath + suffix, token, out FileVersion? variant) == LookupResult.File)
                    {
                        // A sidecar older than its original is stale (the original was rebuilt without it).
                        if (variant!.LastModified >= identity.LastModified)
                        {
                            selected = variant;
                        }
                        else
                        {
                            variant.Dispose();
                        }
                    }
                }
            }

            var settings = new FileResponseSettings
            {
                ContentType = contentType,
                CacheControl = _fingerprint is not null && _fingerprint.IsMatch(subpath) ? FastStaticFileOptions.ImmutableCacheControl : _options.CacheControl,
                VaryAcceptEncoding = available != ContentCodings.None,
                EnableRangeProcessing = true,
                OnPrepareResponse = _options.OnPrepareResponse,
                LogName = subpath,
            };
            await _responder.SendAsync(context, selected, settings);
        }
        finally
        {
            if (selected is not null && !ReferenceEquals(selected, identity))
            {
                selected.Dispose();
            }

            identity?.Dispose();
        }
    }

    private bool TryGetContentType(string subpath, out string? contentType)
    {
        if (_contentTypes.TryGetContentType(subpath, out contentType))
        {
            return true;
        }

        contentType = _options.DefaultContentType;
        return _options.ServeUnknownFileTypes;
    }

    private bool IsDirectory(string subpath)
        => _source is PhysicalFileSource physical
            ? Directory.Exists(physical.MapPath(subpath))
            : _source.TryOpen(subpath, null, out _) == LookupResult.Directory;

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
        foreach ((ContentCodings coding, string suffix, _) in Sidecars)
        {
            if (_source.FileExists(subpath + suffix))
            {
                available |= coding;
            }
        }

        return available;
    }
}
