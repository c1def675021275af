using System.Globalization;
using Microsoft.Extensions.Primitives;

namespace FastFiles.StaticFiles;

/// <summary>Content codings FastFiles can serve from precompressed sidecar files.</summary>
[Flags]
internal enum ContentCodings
{
    None = 0,
    Brotli = 1,
    Zstd = 2,
    Gzip = 4,
}

/// <summary>
/// Reads Accept-Encoding (RFC 9110 12.5.3) into quality values for the codings we have sidecars for, without
/// allocating.
/// </summary>
internal readonly struct AcceptEncoding
{
    private const int Unset = -1;

    // Qualities in thousandths (RFC 9110 12.4.2 allows three decimals); Unset means "not mentioned".
    private readonly short _br;
    private readonly short _zstd;
    private readonly short _gzip;
    private readonly short _identity;
    private readonly short _star;

    private AcceptEncoding(short br, short zstd, short gzip, short identity, short star)
    {
        _br = br;
        _zstd = zstd;
        _gzip = gzip;
        _identity = identity;
        _star = star;
    }

    public static AcceptEncoding Parse(StringValues values)
    {
        short br = Unset, zstd = Unset, gzip = Unset, identity = Unset, star = Unset;
        for (int i = 0; i < values.Count; i++)
        {
            ParseLine(values[i], ref br, ref zstd, ref gzip, ref identity, ref star);
        }

        return new AcceptEncoding(br, zstd, gzip, identity, star);
    }

    /// <summary>Parses one field line (what the static lane has, as the request's own characters).</summary>
    public static AcceptEncoding Parse(ReadOnlySpan<char> line)
    {
        short br = Unset, zstd = Unset, gzip = Unset, identity = Unset, star = Unset;
        ParseLine(line, ref br, ref zstd, ref gzip, ref identity, ref star);
        return new AcceptEncoding(br, zstd, gzip, identity, star);
    }

    private static void ParseLine(ReadOnlySpan<char> rest, ref short br, ref short zstd, ref short gzip, ref short identity, ref short star)
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

            if (coding.Equals("br", StringComparison.OrdinalIgnoreCase))
            {
                br = q;
            }
            else if (coding.Equals("gzip", StringComparison.OrdinalIgnoreCase) || coding.Equals("x-gzip", StringComparison.OrdinalIgnoreCase))
            {
                gzip = q;
            }
            else if (coding.Equals("zstd", StringComparison.OrdinalIgnoreCase))
            {
                zstd = q;
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
        short q = coding switch
        {
            ContentCodings.Brotli => _br,
            ContentCodings.Zstd => _zstd,
            ContentCodings.Gzip => _gzip,
            _ => Unset,
        };
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
        foreach (ContentCodings coding in (ReadOnlySpan<ContentCodings>)[ContentCodings.Brotli, ContentCodings.Zstd, ContentCodings.Gzip])
        {
            int q = (available & coding) == 0 ? 0 : QualityOf(coding);
            if (q > bestQ)
            {
                bestQ = q;
                best = coding;
            }
        }

        // Only an identity the client ranked itself competes on quality: an unlisted identity is acceptable but
        // not preferred, or "gzip;q=0.9" (any q below 1) would never get the sidecar.
        int identity = _identity != Unset ? _identity : 0;
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
}
