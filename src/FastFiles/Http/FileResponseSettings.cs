using Microsoft.AspNetCore.Builder;

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

    /// <summary>What to name the resource in logs (the request sub-path).</summary>
    public string LogName { get; init; }
}
