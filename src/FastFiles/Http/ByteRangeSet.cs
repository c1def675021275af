namespace FastFiles.Http;

/// <summary>One satisfiable byte range of a representation.</summary>
internal readonly record struct ByteRange(long Start, long Count)
{
    public long End => Start + Count;
}

/// <summary>
/// Evaluates a Range header with several range-specs (RFC 9110 14.1.2) for a multipart/byteranges response
/// (RFC 9110 14.6), with the defences RFC 9110 14.2 allows against amplification (CVE-2011-3192): more specs than
/// <c>maxRanges</c>, or specs asking for more bytes in total than the representation holds (overlaps, repeats),
/// get the whole representation (200), as nginx does; overlapping and adjacent ranges are coalesced, so no byte
/// is sent twice; a set that coalesces to one range is a plain single-part 206.
/// </summary>
internal static class ByteRangeSet
{
    /// <summary>
    /// <see cref="RangeKind.Multiple"/> with the parts in <paramref name="ranges"/> (in request order, or ascending when
    /// some were coalesced); <see cref="RangeKind.Single"/> with the one range in <paramref name="start"/> and
    /// <paramref name="count"/>; <see cref="RangeKind.Unsatisfiable"/> (416) when no spec is; <see cref="RangeKind.None"/>
    /// when the header is to be ignored (malformed, not bytes, too many specs, or more bytes than the representation).
    /// </summary>
    public static RangeKind Parse(ReadOnlySpan<char> header, long length, int maxRanges, out ByteRange[]? ranges, out long start, out long count)
    {
        ranges = null;
        start = 0;
        count = 0;
        if (!ByteRangeParser.TryGetByteRangeSet(header, out ReadOnlySpan<char> rest))
        {
            return RangeKind.None;
        }

        var satisfiable = new List<ByteRange>();
        int members = 0;
        long requested = 0;
        while (true)
        {
            int comma = rest.IndexOf(',');
            ReadOnlySpan<char> spec = (comma < 0 ? rest : rest[..comma]).Trim(" \t");
            if (!spec.IsEmpty)
            {
                if (++members > maxRanges)
                {
                    return RangeKind.None;
                }

                switch (ByteRangeParser.ParseSpec(spec, length, out long first, out long n))
                {
                    case RangeKind.None:
                        // One malformed spec makes the whole header invalid (RFC 9110 14.2): ignore it.
                        return RangeKind.None;
                    case RangeKind.Single:
                        satisfiable.Add(new ByteRange(first, n));
                        // Each count is at most length and members at most maxRanges: no overflow before this check.
                        requested += n;
                        if (requested > length)
                        {
                            return RangeKind.None;
                        }

                        break;
                }
            }

            if (comma < 0)
            {
                break;
            }

            rest = rest[(comma + 1)..];
        }

        if (members == 0)
        {
            return RangeKind.None;
        }

        if (satisfiable.Count == 0)
        {
            return RangeKind.Unsatisfiable;
        }

        ByteRange[] parts = Coalesce(satisfiable);
        if (parts.Length == 1)
        {
            start = parts[0].Start;
            count = parts[0].Count;
            return RangeKind.Single;
        }

        ranges = parts;
        return RangeKind.Multiple;
    }

    // RFC 9110 14.6: parts in the order requested, except where ranges were coalesced; then ascending.
    private static ByteRange[] Coalesce(List<ByteRange> requested)
    {
        ByteRange[] sorted = requested.ToArray();
        Array.Sort(sorted, static (a, b) => a.Start.CompareTo(b.Start));
        var merged = new List<ByteRange>(sorted.Length);
        ByteRange current = sorted[0];
        for (int i = 1; i < sorted.Length; i++)
        {
            ByteRange next = sorted[i];
            if (next.Start <= current.End)
            {
                current = new ByteRange(current.Start, Math.Max(current.End, next.End) - current.Start);
            }
            else
            {
                merged.Add(current);
                current = next;
            }
        }

        merged.Add(current);
        return merged.Count == requested.Count ? requested.ToArray() : merged.ToArray();
    }
}
