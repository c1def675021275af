using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using FastFiles.Responses;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
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

    /// <summary>The absolute path of the file to send.</summary>
    public string FileName { get; }

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
        FastFilesOptions options = services?.GetService<IOptions<FastFilesOptions>>()?.Value ?? new FastFilesOptions();
        ILogger logger = services?.GetService<ILoggerFactory>()?.CreateLogger("FastFiles.Results") ?? NullLogger.Instance;

        FileVersion file;
        try
        {
            file = FileVersion.Open(FileName, contentEncoding: null);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
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
            await new FileResponder(options, logger).SendAsync(httpContext, file, settings);
        }
    }
}
