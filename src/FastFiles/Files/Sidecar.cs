using System.Numerics;

namespace FastFiles.Files;

/// <summary>Content codings FastFiles serves from precompressed sidecar files (RFC 9110 8.4.1).</summary>
[Flags]
internal enum ContentCodings
{
    None = 0,
    Brotli = 1 << 0,
    Zstd = 1 << 1,
    Gzip = 1 << 2,
}

/// <summary>
/// One content coding: its flag, the suffix of its sidecar file, its Content-Encoding token, and whether FastFiles can
/// produce it itself (System.IO.Compression has brotli and gzip encoders; zstd is served from sidecars only).
/// </summary>
internal sealed record ContentCoding(ContentCodings Coding, string Suffix, string Token, bool Producible);

/// <summary>
/// The one table of content codings and their sidecar files (the file beside <c>app.js</c> named <c>app.js.br</c>),
/// in server preference order: smallest output first, which also breaks quality ties in Accept-Encoding.
/// </summary>
internal static class Sidecar
{
    /// <summary>Every coding; a coding's index here is the index of its bit in <see cref="ContentCodings"/>.</summary>
    public static readonly ContentCoding[] All =
    [
        new(ContentCodings.Brotli, ".br", "br", Producible: true),
        new(ContentCodings.Zstd, ".zst", "zstd", Producible: false),
        new(ContentCodings.Gzip, ".gz", "gzip", Producible: true),
    ];

    /// <summary>The codings dynamic compression can make when a file has no sidecar for them.</summary>
    public static readonly ContentCodings Producible = All.Where(c => c.Producible).Aggregate(ContentCodings.None, (all, c) => all | c.Coding);

    /// <summary>
    /// The path of the file a version at <paramref name="physicalPath"/> in <paramref name="contentEncoding"/> stands for:
    /// a sidecar's original (<c>app.js</c> for <c>app.js.br</c>); the same path for the identity and for variants made in
    /// memory, which keep their original's path.
    /// </summary>
    public static string? OriginalPath(string? physicalPath, string? contentEncoding)
    {
        if (physicalPath is null || contentEncoding is null)
        {
            return physicalPath;
        }

        foreach (ContentCoding coding in All)
        {
            if (string.Equals(coding.Token, contentEncoding, StringComparison.OrdinalIgnoreCase) && physicalPath.EndsWith(coding.Suffix, StringComparison.Ordinal))
            {
                return physicalPath[..^coding.Suffix.Length];
            }
        }

        return physicalPath;
    }

    /// <summary>The index in <see cref="All"/> of a single coding.</summary>
    public static int IndexOf(ContentCodings coding) => BitOperations.TrailingZeroCount((uint)coding);

    /// <summary>The coding a Content-Encoding or Accept-Encoding token names (case-insensitive), else <see cref="ContentCodings.None"/>.</summary>
    public static ContentCodings FromToken(ReadOnlySpan<char> token)
    {
        foreach (ContentCoding entry in All)
        {
            if (token.Equals(entry.Token, StringComparison.OrdinalIgnoreCase))
            {
                return entry.Coding;
            }
        }

        // RFC 9110 8.4.1.3: a recipient should treat "x-gzip" as "gzip".
        return token.Equals("x-gzip", StringComparison.OrdinalIgnoreCase) ? ContentCodings.Gzip : ContentCodings.None;
    }

    /// <summary>
    /// Whether a sidecar may stand for <paramref name="original"/>: one older than its original is stale (the
    /// original was rebuilt without it) and is ignored.
    /// </summary>
    /// <remarks>
    /// Compared at Last-Modified's one-second resolution, on purpose: a deployment that copies a site without keeping
    /// times (<c>cp -r</c>) writes each sidecar a few microseconds before or after its original, in directory order, and
    /// a finer comparison would drop about half of them. A sidecar left over from an earlier build within the same
    /// second as the new original is the price. The files' own times, not the Last-Modified sent (which a time in the
    /// future does not keep).
    /// </remarks>
    public static bool IsFresh(FileVersion sidecar, FileVersion original)
        => FileVersion.Seconds(sidecar.Stamp.ModifiedTicks) >= FileVersion.Seconds(original.Stamp.ModifiedTicks);

    /// <summary>The original's sub-path when <paramref name="path"/> names a sidecar, else null.</summary>
    public static string? OriginalOf(string path)
    {
        foreach (ContentCoding entry in All)
        {
            if (path.EndsWith(entry.Suffix, StringComparison.Ordinal))
            {
                return path[..^entry.Suffix.Length];
            }
        }

        return null;
    }
}
