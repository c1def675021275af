namespace FastFiles.Http;

/// <summary>The outcome of evaluating a Range header against a representation's length.</summary>
internal enum RangeKind
{
    /// <summary>No usable Range: send the whole representation (absent, malformed, not bytes, or multiple ranges).</summary>
    None,

    /// <summary>One satisfiable range: 206.</summary>
    Single,

    /// <summary>Well-formed but unsatisfiable: 416 with <c>Content-Range: bytes */length</c>.</summary>
    Unsatisfiable,

    /// <summary>Several satisfiable ranges after coalescing: 206 with a multipart/byteranges body (<see cref="ByteRangeSet"/>).</summary>
    Multiple,
}

/// <summary>
/// Parses a single <c>bytes</c> range (RFC 9110 14.1.2), the common case, without allocating. A header with several
/// range-specs is <see cref="RangeKind.None"/> here; <see cref="ByteRangeSet"/> evaluates those.
/// </summary>
internal static class ByteRangeParser
{
    public static RangeKind Parse(ReadOnlySpan<char> header, long length, out long start, out long count)
    {
        start = 0;
        count = 0;
        if (!TryGetByteRangeSet(header, out ReadOnlySpan<char> spec))
        {
            return RangeKind.None;
        }

        int comma = spec.IndexOf(',');
        if (comma >= 0)
        {
            // A list with one real member and empty elements ("bytes=0-1,") is still a single range.
            ReadOnlySpan<char> first = spec[..comma].Trim(" \t");
            ReadOnlySpan<char> tail = spec[(comma + 1)..].Trim(" \t,");
            if (!tail.IsEmpty || first.IsEmpty)
            {
                return RangeKind.None;
            }

            spec = first;
        }

        return ParseSpec(spec.Trim(" \t"), length, out start, out count);
    }

    /// <summary>The range-specs after <c>bytes=</c> (the unit is case-insensitive, RFC 9110 14.1); false for other units.</summary>
    internal static bool TryGetByteRangeSet(ReadOnlySpan<char> header, out ReadOnlySpan<char> set)
    {
        header = header.Trim(" \t");
        bool bytes = header.Length >= 6 && header[..6].Equals("bytes=", StringComparison.OrdinalIgnoreCase);
        set = bytes ? header[6..] : default;
        return bytes;
    }

    /// <summary>
    /// One range-spec (<c>first-last</c>, <c>first-</c> or <c>-suffix</c>) against <paramref name="length"/>:
    /// <see cref="RangeKind.Single"/> when satisfiable, <see cref="RangeKind.Unsatisfiable"/>, or
    /// <see cref="RangeKind.None"/> when malformed or a suffix of an empty representation (to be ignored).
    /// </summary>
    internal static RangeKind ParseSpec(ReadOnlySpan<char> spec, long length, out long start, out long count)
    {
        start = 0;
        count = 0;
        int dash = spec.IndexOf('-');
        if (dash < 0)
        {
            return RangeKind.None;
        }

        ReadOnlySpan<char> firstText = spec[..dash].Trim(" \t");
        ReadOnlySpan<char> lastText = spec[(dash + 1)..].Trim(" \t");

        if (firstText.IsEmpty)
        {
            // suffix-range: "-N" means the last N bytes.
            if (!TryParseSaturating(lastText, out long suffix))
            {
                return RangeKind.None;
            }

            if (suffix == 0)
            {
                return RangeKind.Unsatisfiable;
            }

            if (length == 0)
            {
                // RFC 9110 14.1.2: the one satisfiable range of an empty representation, which no Content-Range can
                // express; the Range is ignored (14.2 allows it) and the empty 200 goes.
                return RangeKind.None;
            }

            count = Math.Min(suffix, length);
            start = length - count;
            return RangeKind.Single;
        }

        if (!TryParseSaturating(firstText, out long firstPos))
        {
            return RangeKind.None;
        }

        long lastPos = long.MaxValue;
        if (!lastText.IsEmpty)
        {
            if (!TryParseSaturating(lastText, out lastPos))
            {
                return RangeKind.None;
            }

            if (lastPos < firstPos)
            {
                // Syntactically invalid (RFC 9110 14.1.1): ignore the header.
                return RangeKind.None;
            }
        }

        if (firstPos >= length)
        {
            return RangeKind.Unsatisfiable;
        }

        // A last-pos past the end means "to the end" (RFC 9110 14.1.1).
        long last = Math.Min(lastPos, length - 1);
        start = firstPos;
        count = last - firstPos + 1;
        return RangeKind.Single;
    }

    // Digits only; values past long.MaxValue saturate, so a 30-digit last-pos means "to the end" and a 30-digit
    // first-pos is simply unsatisfiable, as the RFC's grammar (unbounded 1*DIGIT) implies.
    private static bool TryParseSaturating(ReadOnlySpan<char> digits, out long value)
    {
        value = 0;
        if (digits.IsEmpty)
        {
            return false;
        }

        foreach (char c in digits)
        {
            uint d = (uint)(c - '0');
            if (d > 9)
            {
                return false;
            }

            value = value > (long.MaxValue - d) / 10 ? long.MaxValue : (value * 10) + d;
        }

        return true;
    }
}
