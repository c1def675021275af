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
