using System.Globalization;
using System.Runtime.CompilerServices;
using FastFiles.Files;
using Microsoft.Extensions.Primitives;

namespace FastFiles.Http;

/// <summary>
/// Reads Accept-Encoding (RFC 9110 12.5.3) into quality values for the codings we have sidecars for, without
/// allocating.
/// </summary>
internal readonly struct AcceptEncoding
{
    private const short Unset = -1;

    // Qualities in thousandths (RFC 9110 12.4.2 allows three decimals); Unset means "not mentioned".
    // _codings is indexed like Sidecar.All.
    private readonly Qualities _codings;
    private readonly short _identity;
    private readonly short _star;

    private AcceptEncoding(Qualities codings, short identity, short star)
    {
        _codings = codings;
        _identity = identity;
        _star = star;
    }

    public static AcceptEncoding Parse(StringValues values)
    {
        Qualities codings = default;
        ((Span<short>)codings).Fill(Unset);
        short identity = Unset, star = Unset;
        for (int i = 0; i < values.Count; i++)
        {
            ParseLine(values[i], ref codings, ref identity, ref star);
        }

        return new AcceptEncoding(codings, identity, star);
    }

    /// <summary>Parses one field line (what the static lane has, as the request's own characters).</summary>
    public static AcceptEncoding Parse(ReadOnlySpan<char> line)
    {
        Qualities codings = default;
        ((Span<short>)codings).Fill(Unset);
        short identity = Unset, star = Unset;
        ParseLine(line, ref codings, ref identity, ref star);
        return new AcceptEncoding(codings, identity, star);
    }

    private static void ParseLine(ReadOnlySpan<char> rest, ref Qualities codings, ref short identity, ref short star)
    {
        while (!rest.IsEmpty)
        {
            int comma = rest.IndexOf(',');
            ReadOnlySpan<char> member = comma < 0 ? rest : rest[..comma];
            rest = comma < 0 ? default : rest[(comma + 1)..];

            int semi = member.IndexOf(';');
            ReadOnlySpan<char> coding = (semi < 0 ? member : member[..semi]).Trim(" \t");
            if (coding.IsEmpty)
            {
                continue;
            }

            short q = semi < 0 ? (short)1000 : ParseQuality(member[(semi + 1)..]);
            if (q < 0)
            {
                continue;
            }

            ContentCodings known = Sidecar.FromToken(coding);
            if (known != ContentCodings.None)
            {
                codings[Sidecar.IndexOf(known)] = q;
            }
            else if (coding.Equals("identity", StringComparison.OrdinalIgnoreCase))
            {
                identity = q;
            }
            else if (coding.SequenceEqual("*"))
            {
                star = q;
            }
        }
    }

    /// <summary>Quality of a coding in thousandths; a coding not listed takes "*"'s weight, else 0.</summary>
    public int QualityOf(ContentCodings coding)
    {
        short q = coding == ContentCodings.None ? Unset : _codings[Sidecar.IndexOf(coding)];
        return q != Unset ? q : (_star != Unset ? _star : 0);
    }

    /// <summary>
    /// Quality of the identity coding: acceptable (1000) unless excluded by <c>identity;q=0</c>, or by
    /// <c>*;q=0</c> without an identity entry (RFC 9110 12.5.3).
    /// </summary>
    public int IdentityQuality => _identity != Unset ? _identity : (_star == 0 ? 0 : 1000);

    /// <summary>
    /// Picks the best of the <paramref name="available"/> codings, or <see cref="ContentCodings.None"/> for the
    /// identity representation. Ties go to the smaller encoding (br, then zstd, then gzip, then identity); a
    /// coding with q=0 is never chosen. When nothing is acceptable, identity is sent: RFC 9110 12.5.3 lets a
    /// server disregard the header rather than answer 406.
    /// </summary>
    public ContentCodings Select(ContentCodings available)
    {
        ContentCodings best = ContentCodings.None;
        int bestQ = 0;
        foreach (ContentCoding entry in Sidecar.All)
        {
            ContentCodings coding = entry.Coding;
            int q = (available & coding) == 0 ? 0 : QualityOf(coding);
            if (q > bestQ)
            {
                bestQ = q;
                best = coding;
            }
        }

        // Only an identity the client ranked competes on quality, by name or through "*", which stands for every coding
        // not listed, identity included (RFC 9110 12.5.3): "gzip;q=0.5, *" prefers identity. An identity not ranked at all
        // is acceptable but not preferred, or "gzip;q=0.9" (any q below 1) would never get the sidecar.
        int identity = _identity != Unset ? _identity : (_star != Unset ? _star : 0);
        return bestQ > 0 && bestQ >= identity ? best : ContentCodings.None;
    }

    // "q=0.5" with optional whitespace; returns -1 when malformed (the member is then ignored).
    private static short ParseQuality(ReadOnlySpan<char> parameters)
    {
        parameters = parameters.Trim(" \t");
        if (parameters.Length < 3 || (parameters[0] != 'q' && parameters[0] != 'Q'))
        {
            return -1;
        }

        ReadOnlySpan<char> value = parameters[1..].TrimStart(" \t");
        if (value.IsEmpty || value[0] != '=')
        {
            return -1;
        }

        value = value[1..].Trim(" \t");
        if (!decimal.TryParse(value, NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out decimal q) || q > 1)
        {
            return -1;
        }

        return (short)Math.Round(q * 1000);
    }

    [InlineArray(3)]
    private struct Qualities
    {
        private short _element;
    }
}
