using FastFiles.Files;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Primitives;
using Microsoft.Net.Http.Headers;

namespace FastFiles.Http;

/// <summary>
/// RFC 9110 evaluation of a GET or HEAD for one file version: preconditions (13.1, 13.2.2), If-Range (13.1.5) and
/// byte ranges (14.1.2, 14.2; several ranges through <see cref="ByteRangeSet"/>). Pure functions of the request's header values, the file version and the
/// clock: no <see cref="HttpContext"/>, so the middleware, the results and connection-level code share them.
/// </summary>
internal static class FileRequestEvaluator
{
    /// <summary>
    /// The status for a GET or HEAD of <paramref name="file"/>: preconditions (RFC 9110 13.2.2), then for GET the
    /// byte ranges, honoured only if If-Range allows it. <paramref name="start"/> and <paramref name="count"/> are the
    /// bytes to send for 200 and a single-part 206; <paramref name="ranges"/> the parts of a multipart 206, when
    /// <paramref name="maxRanges"/> (default 1: several ranges get a 200) allows several. <paramref name="parsed"/>, when given, memoizes parsed values per
    /// connection; <paramref name="now"/> (default: the current time) bounds valid dates. <paramref name="codings"/>: the
    /// resource has content-coded variants, whose representations share one Last-Modified, so a date in If-Range does
    /// not identify the bytes a client holds and only an entity tag keeps the range (RFC 9110 13.1.5, 8.8.2.2).
    /// </summary>
    public static int Evaluate(
        in FileRequestHeaders headers,
        FileVersion file,
        bool isGet,
        bool isHead,
        bool enableRanges,
        RequestHeaderCache? parsed,
        out long start,
        out long count,
        out ByteRange[]? ranges,
        int maxRanges = 1,
        DateTimeOffset? now = null,
        bool codings = false)
    {
        ranges = null;
        int status = EvaluatePreconditions(headers, file, isGet || isHead, parsed, now);
        start = 0;
        count = file.Length;
        if (status != StatusCodes.Status200OK || !isGet || !enableRanges)
        {
            return status;
        }

        StringValues range = headers.Range;
        // A Range with several field lines is not a single range; like a multi-range it gets the whole file.
        if (range.Count != 1 || (codings && IsDateIfRange(headers.IfRange)) || !IfRangeAllows(headers.IfRange, file, parsed))
        {
            return status;
        }

        RangeKind kind = ByteRangeParser.Parse(range.ToString(), file.Length, out start, out count);
        if (kind == RangeKind.None && maxRanges > 1 && range.ToString().Contains(','))
        {
            kind = ByteRangeSet.Parse(range.ToString(), file.Length, maxRanges, out ranges, out start, out count);
        }

        switch (kind)
        {
            case RangeKind.Single:
            case RangeKind.Multiple:
                return StatusCodes.Status206PartialContent;
            case RangeKind.Unsatisfiable:
                return StatusCodes.Status416RangeNotSatisfiable;
            default:
                start = 0;
                count = file.Length;
                return status;
        }
    }

    /// <summary>RFC 9110 13.2.2 steps 1-4; 200 when the request should proceed.</summary>
    public static int EvaluatePreconditions(
        in FileRequestHeaders headers, FileVersion file, bool isGetOrHead, RequestHeaderCache? parsed = null, DateTimeOffset? now = null)
    {
        // A field is present when it has a line, even an empty one: an empty value is an empty list (RFC 9110 5.6.1), which
        // matches nothing, so an empty If-Match fails and an empty If-None-Match still displaces If-Modified-Since.
        StringValues ifMatch = headers.IfMatch;
        if (ifMatch.Count > 0)
        {
            // 13.1.1: strong comparison; a value that is neither "*" nor a list of entity-tags is a false condition.
            if (EntityTagMatcher.AnyMatches(ifMatch, file.ETag, strong: true) != true)
            {
                return StatusCodes.Status412PreconditionFailed;
            }
        }
        else if (TryParseDate(headers.IfUnmodifiedSince, file, parsed, unmodified: true, now, out DateTimeOffset unmodifiedSince)
            && file.LastModified > unmodifiedSince)
        {
            // 13.1.4
            return StatusCodes.Status412PreconditionFailed;
        }

        StringValues ifNoneMatch = headers.IfNoneMatch;
        if (ifNoneMatch.Count > 0)
        {
            // 13.1.2: weak comparison; a match is 304 for GET/HEAD, 412 otherwise, and anything else (a malformed value
            // included) a true condition. 13.1.3: If-Modified-Since is then ignored.
            bool? hit = EntityTagMatcher.AnyMatches(ifNoneMatch, file.ETag, strong: false);
            return hit != true ? StatusCodes.Status200OK
                : isGetOrHead ? StatusCodes.Status304NotModified : StatusCodes.Status412PreconditionFailed;
        }

        // 13.1.3: GET and HEAD only.
        if (isGetOrHead && TryParseDate(headers.IfModifiedSince, file, parsed, unmodified: false, now, out DateTimeOffset modifiedSince)
            && file.LastModified <= modifiedSince)
        {
            return StatusCodes.Status304NotModified;
        }

        return StatusCodes.Status200OK;
    }

    /// <summary>RFC 9110 13.1.5: a Range applies only if If-Range (when present) names the current version.</summary>
    public static bool IfRangeAllows(StringValues ifRange, FileVersion file, RequestHeaderCache? parsed = null)
    {
        // An empty If-Range is present and names no version: the full representation, as for any other invalid value.
        if (ifRange.Count == 0)
        {
            return true;
        }

        return parsed is not null ? parsed.IfRange(ifRange, file) : IfRangeAllowsUncached(ifRange, file);
    }

    // A client that resumes with a date may hold identity bytes while the range would come from a variant made since (or
    // the other way round, after an eviction): the date matches both, the bytes would mix two codings.
    private static bool IsDateIfRange(StringValues ifRange)
    {
        if (StringValues.IsNullOrEmpty(ifRange))
        {
            return false;
        }

        return !IsEntityTag(ifRange.ToString().AsSpan().TrimStart(" \t"));
    }

    // RFC 9110 13.1.5: If-Range holds an entity tag (possibly weak) or an HTTP-date; a tag starts with W/ or a quote.
    private static bool IsEntityTag(ReadOnlySpan<char> value)
        => value.StartsWith("W/", StringComparison.Ordinal) || value.StartsWith("\"", StringComparison.Ordinal);

    /// <summary><see cref="IfRangeAllows"/> without the memo (what the memo calls on a miss).</summary>
    public static bool IfRangeAllowsUncached(StringValues ifRange, FileVersion file)
    {
        if (ifRange.Count != 1)
        {
            return false;
        }

        ReadOnlySpan<char> value = ifRange.ToString().AsSpan().Trim(" \t");
        if (IsEntityTag(value))
        {
            ReadOnlySpan<char> rest = value;
            // A weak tag never matches here: If-Range uses strong comparison.
            return EntityTagMatcher.TryReadTag(ref rest, out ReadOnlySpan<char> tag, out bool weak)
                && rest.IsEmpty
                && EntityTagMatcher.Matches(tag, weak, file.ETag, strong: true);
        }

        // An HTTP-date must equal Last-Modified exactly.
        return HeaderUtilities.TryParseDate(value.ToString(), out DateTimeOffset date) && date == file.LastModified;
    }

    // RFC 9110 13.1.3/13.1.4: ignore the field when it is not one valid HTTP-date; a date in the future is
    // treated as invalid, as UseStaticFiles does.
    private static bool TryParseDate(StringValues values, FileVersion file, RequestHeaderCache? parsed, bool unmodified, DateTimeOffset? now, out DateTimeOffset date)
    {
        date = default;
        if (values.Count != 1)
        {
            return false;
        }

        DateTimeOffset? value;
        string field = values.ToString();
        if (ReferenceEquals(field, file.LastModifiedHeader) || string.Equals(field, file.LastModifiedHeader, StringComparison.Ordinal))
        {
            // The version's own Last-Modified echoed back (the usual revalidation): its date, with no parse and no memo
            // slot (a page's files revalidated on one connection would replace the slot, an allocation, every request).
            value = file.LastModified;
        }
        else if (parsed is not null)
        {
            value = unmodified ? parsed.IfUnmodifiedSince(field) : parsed.IfModifiedSince(field);
        }
        else
        {
            value = HeaderUtilities.TryParseDate(field, out DateTimeOffset direct) ? direct : null;
        }

        date = value.GetValueOrDefault();
        return value.HasValue && date <= (now ?? DateTimeOffset.UtcNow);
    }
}
