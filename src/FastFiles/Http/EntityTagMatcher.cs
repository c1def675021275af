using Microsoft.Extensions.Primitives;

namespace FastFiles.Http;

/// <summary>
/// Matches entity-tag lists (RFC 9110 8.8.3) against a representation's strong ETag without allocating:
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
            ReadOnlySpan<char> rest = values[i];
            while (true)
            {
                rest = rest.TrimStart(" \t,");
                if (rest.IsEmpty)
                {
                    break;
                }

                if (rest[0] == '*')
                {
                    // "*" matches any current representation (RFC 9110 13.1.1, 13.1.2).
                    return true;
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
        }

        return sawMember ? false : null;
    }

    /// <summary>
    /// Compares one entity-tag with <paramref name="etag"/> (always strong and quoted). Strong comparison
    /// (RFC 9110 8.8.3.2) fails for weak tags; weak comparison ignores the W/ prefix.
    /// </summary>
    public static bool Matches(ReadOnlySpan<char> tag, bool weak, string? etag, bool strong)
        => etag is not null && (!strong || !weak) && tag.SequenceEqual(etag);

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
