using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Primitives;

namespace FastFiles.Http;

/// <summary>
/// The request header fields that decide a file response (RFC 9110 12.5.3, 13, 14), as raw field values: read
/// from an <see cref="IHeaderDictionary"/> by the middleware and results, or from a parsed request by anything
/// that has no <see cref="HttpContext"/>.
/// </summary>
internal readonly struct FileRequestHeaders
{
    public StringValues IfMatch { get; init; }

    public StringValues IfNoneMatch { get; init; }

    public StringValues IfModifiedSince { get; init; }

    public StringValues IfUnmodifiedSince { get; init; }

    public StringValues IfRange { get; init; }

    public StringValues Range { get; init; }

    public StringValues AcceptEncoding { get; init; }

    /// <summary>Whether a condition compares entity tags (If-Match, If-None-Match, If-Range).</summary>
    public bool HasEntityTagCondition
        => IfMatch.Count > 0 || IfNoneMatch.Count > 0 || IfRange.Count > 0;

    public static FileRequestHeaders From(IHeaderDictionary headers) => new()
    {
        IfMatch = headers.IfMatch,
        IfNoneMatch = headers.IfNoneMatch,
        IfModifiedSince = headers.IfModifiedSince,
        IfUnmodifiedSince = headers.IfUnmodifiedSince,
        IfRange = headers.IfRange,
        Range = headers.Range,
        AcceptEncoding = headers.AcceptEncoding,
    };
}

/// <summary>
/// A GET or HEAD as the file layers see it: the method, the header values and the connection's memo of parsed
/// values, read once per request and handed to everything that answers it.
/// </summary>
internal readonly struct FileRequest(FileRequestHeaders headers, bool isGet, bool isHead, RequestHeaderCache? memo)
{
    public FileRequestHeaders Headers { get; } = headers;

    public bool IsGet { get; } = isGet;

    public bool IsHead { get; } = isHead;

    /// <summary>The per-connection memo of parsed values; <see langword="null"/> when string reuse is off or there is none.</summary>
    public RequestHeaderCache? Memo { get; } = memo;

    /// <summary>Accept-Encoding, through the memo when there is one.</summary>
    public AcceptEncoding AcceptEncoding()
        => Memo is { } memo ? memo.AcceptEncoding(Headers.AcceptEncoding) : Http.AcceptEncoding.Parse(Headers.AcceptEncoding);
}
