using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http.Features;

namespace FastFiles.Http;

/// <summary>Per-response choices the caller (middleware or file result) makes before <c>FileResponder</c> runs.</summary>
internal readonly struct FileResponseSettings
{
    public string? ContentType { get; init; }

    public string? CacheControl { get; init; }

    /// <summary>Whether the resource has precompressed variants, so every response to it varies by Accept-Encoding.</summary>
    public bool VaryAcceptEncoding { get; init; }

    public bool EnableRangeProcessing { get; init; }

    public string? ContentDisposition { get; init; }

    public Action<FastFileResponseContext>? OnPrepareResponse { get; init; }

    public Func<FastFileResponseContext, Task>? OnPrepareResponseAsync { get; init; }

    /// <summary>
    /// A file result's rule (as <c>Results.File</c>): a 206, 304, 412 or 416 replaces whatever status the app set. Off, the
    /// middleware's (as <c>UseStaticFiles</c>): only the default 200 is replaced, so a status code page or an exception
    /// handler that re-executes into a file keeps its 404 or 500. A 200 never replaces the app's status.
    /// </summary>
    public bool ReplacesAppStatus { get; init; }

    /// <summary>
    /// Given to the app's response compression for a response with a body (<c>IHttpsCompressionFeature</c>), as
    /// <c>UseStaticFiles</c> does; <see cref="HttpsCompressionMode.Default"/> (file results) leaves it alone.
    /// </summary>
    public HttpsCompressionMode HttpsCompression { get; init; }

    /// <summary>What to name the resource in logs (the request sub-path).</summary>
    public string LogName { get; init; }
}
