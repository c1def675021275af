using Microsoft.Extensions.Primitives;

namespace FastFiles.Http;

/// <summary>
/// Matches entity-tag lists (RFC 9110 8.8.3) against a representation's ETag without allocating:
/// the header values are scanned in place.
/// </summary>
internal static class EntityTagMatcher
{
    /// <summary>
    /// Evaluates a list such as If-Match or If-None-Match. Returns <see langword="null"/> when the header holds
    /// no well-formed member (the field is then ignored), otherwise whether any member matches. A
    /// <see langword="null"/> <paramref name="etag"/> (a representation without one) is matched only by <c>*</c>.
    /// </summary>
    public static bool? AnyMatches(StringValues values, string? etag, bool strong)
    {
        bool sawMember = false;
        for (int i = 0; i < values.Count; i++)
        {
            if (AnyMatches(values[i], etag, strong, ref sawMember, alone: values.Count == 1))
            {
                return true;
            }
        }

        return sawMember ? false : null;
    }

    /// <summary>As <see cref="AnyMatches(StringValues, string?, bool)"/> for one field line.</summary>
    public static bool? AnyMatches(ReadOnlySpan<char> line, string? etag, bool strong)
    {
        bool sawMember = false;
        return AnyMatches(line, etag, strong, ref sawMember, alone: true) ? true : sawMember ? false : null;
    }

    // alone: the line is the field's only one.
    private static bool AnyMatches(ReadOnlySpan<char> rest, string? etag, bool strong, ref bool sawMember, bool alone)
    {
        // "*" matches any current representation (RFC 9110 13.1.1, 13.1.2), but only as the whole field value: the grammar
        // is "*" / #entity-tag, so a "*" in a list (or with anything after it) is a malformed member, as nginx reads it.
        if (alone && rest.Trim(" \t").SequenceEqual("*"))
        {
            return true;
        }

        while (true)
        {
            rest = rest.TrimStart(" \t,");
            if (rest.IsEmpty)
            {
                break;
            }

            if (!TryReadTag(ref rest, out ReadOnlySpan<char> tag, out bool weak))
            {
                // A malformed list: skip to the next comma rather than guessing.
                int comma = rest.IndexOf(',');
                rest = comma < 0 ? default : rest[(comma + 1)..];
                continue;
            }

            sawMember = true;
            if (Matches(tag, weak, etag, strong))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// Compares one entity-tag with <paramref name="etag"/> (quoted; strong, unless an application gave a weak one,
    /// <c>W/"..."</c>). Strong comparison (RFC 9110 8.8.3.2) fails when either tag is weak; weak comparison ignores
    /// the W/ prefixes.
    /// </summary>
    public static bool Matches(ReadOnlySpan<char> tag, bool weak, string? etag, bool strong)
    {
        if (etag is null)
        {
            return false;
        }

        ReadOnlySpan<char> own = etag;
        bool ownWeak = own.StartsWith("W/", StringComparison.Ordinal);
        return (!strong || (!weak && !ownWeak)) && tag.SequenceEqual(ownWeak ? own[2..] : own);
    }

    /// <summary>Reads <c>[W/]"opaque"</c>; <paramref name="tag"/> includes the quotes.</summary>
    public static bool TryReadTag(ref ReadOnlySpan<char> input, out ReadOnlySpan<char> tag, out bool weak)
    {
        weak = false;
        tag = default;
        ReadOnlySpan<char> s = input;
        if (s.StartsWith("W/", StringComparison.Ordinal))
        {
            weak = true;
            s = s[2..];
        }

        if (s.IsEmpty || s[0] != '"')
        {
            return false;
        }

        int close = s[1..].IndexOf('"');
        if (close < 0)
        {
            return false;
        }

        tag = s[..(close + 2)];
        ReadOnlySpan<char> after = s[(close + 2)..].TrimStart(" \t");
        if (!after.IsEmpty && after[0] != ',')
        {
            return false;
        }

        input = after;
        return true;
    }
}
