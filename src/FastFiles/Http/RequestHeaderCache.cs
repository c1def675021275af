using FastFiles.Files;
using Microsoft.Extensions.Primitives;
using Microsoft.Net.Http.Headers;

namespace FastFiles.Http;

/// <summary>
/// Per-connection memo of the request header values FastFiles parses. Kestrel hands out the same string
/// instance for a repeated known header value on a connection (unless <c>DisableStringReuse</c> is set), so the
/// common case is a reference comparison; an equal value in a new string is an ordinal comparison. Each slot
/// is an immutable pair swapped whole, so concurrent HTTP/2 streams on one connection can share it safely.
/// If-None-Match and Range are not memoized: they are matched and parsed in place without allocating, while a
/// slot is an allocation on every miss, and a page's files revalidated on one connection (each with its own tag)
/// or ranges of several files miss on every request. For the same reason a date equal to the version's own
/// Last-Modified never reaches the date slots (<see cref="FileRequestEvaluator"/> takes it as that date).
/// </summary>
internal sealed class RequestHeaderCache
{
    private Slot<AcceptEncoding>? _acceptEncoding;
    private Slot<DateTimeOffset?>? _ifModifiedSince;
    private Slot<DateTimeOffset?>? _ifUnmodifiedSince;
    private IfRangeSlot? _ifRange;

    /// <summary>Whether nothing has been memoized yet (tests: a connection whose requests must not use the memo).</summary>
    public bool IsEmpty => _acceptEncoding is null && _ifModifiedSince is null && _ifUnmodifiedSince is null && _ifRange is null;

    public AcceptEncoding AcceptEncoding(StringValues values)
    {
        if (values.Count != 1)
        {
            return Http.AcceptEncoding.Parse(values);
        }

        string value = values.ToString();
        Slot<AcceptEncoding>? slot = _acceptEncoding;
        if (slot is not null && slot.Matches(value))
        {
            return slot.Result;
        }

        AcceptEncoding parsed = Http.AcceptEncoding.Parse(values);
        _acceptEncoding = new Slot<AcceptEncoding>(value, parsed);
        return parsed;
    }

    public DateTimeOffset? IfModifiedSince(string value) => Date(ref _ifModifiedSince, value);

    public DateTimeOffset? IfUnmodifiedSince(string value) => Date(ref _ifUnmodifiedSince, value);

    public bool IfRange(StringValues values, FileVersion file)
    {
        // Keyed by what the answer depends on, the version's tag and its Last-Modified (two versions can share one tag: a
        // content hash reused for the same bytes with another modification time), not by the version itself, which may
        // hold the file's bytes: an idle connection would keep them alive after the cache let them go (64 KiB per
        // connection at the defaults, counted by no limit). A version without a tag (content hash not known yet) is not
        // memoized.
        if (values.Count != 1 || file.ETag is not { } etag)
        {
            return FileRequestEvaluator.IfRangeAllowsUncached(values, file);
        }

        string value = values.ToString();
        IfRangeSlot? slot = _ifRange;
        if (slot is not null && slot.Matches(value, etag, file.LastModified))
        {
            return slot.Result;
        }

        bool result = FileRequestEvaluator.IfRangeAllowsUncached(values, file);
        _ifRange = new IfRangeSlot(value, etag, file.LastModified, result);
        return result;
    }

    private static DateTimeOffset? Date(ref Slot<DateTimeOffset?>? field, string value)
    {
        Slot<DateTimeOffset?>? slot = field;
        if (slot is not null && slot.Matches(value))
        {
            return slot.Result;
        }

        DateTimeOffset? parsed = HeaderUtilities.TryParseDate(value, out DateTimeOffset date) ? date : null;
        field = new Slot<DateTimeOffset?>(value, parsed);
        return parsed;
    }

    private sealed class IfRangeSlot(string value, string etag, DateTimeOffset lastModified, bool result)
    {
        public bool Result { get; } = result;

        public bool Matches(string candidate, string candidateETag, DateTimeOffset candidateLastModified)
            => candidateLastModified == lastModified
                && (ReferenceEquals(etag, candidateETag) || string.Equals(etag, candidateETag, StringComparison.Ordinal))
                && (ReferenceEquals(value, candidate) || string.Equals(value, candidate, StringComparison.Ordinal));
    }

    private sealed class Slot<T>(string value, T result)
    {
        public T Result { get; } = result;

        public bool Matches(string candidate) => ReferenceEquals(value, candidate) || string.Equals(value, candidate, StringComparison.Ordinal);
    }
}
