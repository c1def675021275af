namespace FastFiles.StaticFiles;

/// <summary>The precompressed sidecar files FastFiles looks for beside a file, in server preference order.</summary>
internal static class Sidecar
{
    public const int Brotli = 0;
    public const int Zstd = 1;
    public const int Gzip = 2;

    public static readonly (ContentCodings Coding, string Suffix, string Token)[] All =
    [
        (ContentCodings.Brotli, ".br", "br"),
        (ContentCodings.Zstd, ".zst", "zstd"),
        (ContentCodings.Gzip, ".gz", "gzip"),
    ];

    public static int IndexOf(ContentCodings coding) => coding switch
    {
        ContentCodings.Brotli => Brotli,
        ContentCodings.Zstd => Zstd,
        _ => Gzip,
    };

    /// <summary>
    /// Whether a sidecar may stand for <paramref name="original"/>: one older than its original is stale (the
    /// original was rebuilt without it) and is ignored.
    /// </summary>
    public static bool IsFresh(FileVersion sidecar, FileVersion original) => sidecar.LastModified >= original.LastModified;

    /// <summary>The original's sub-path when <paramref name="path"/> names a sidecar, else null.</summary>
    public static string? OriginalOf(string path)
    {
        foreach ((_, string suffix, _) in All)
        {
            if (path.EndsWith(suffix, StringComparison.Ordinal))
            {
                return path[..^suffix.Length];
            }
        }

        return null;
    }
}
