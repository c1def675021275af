using System.IO.Compression;

namespace FastFiles.Sample;

/// <summary>
/// Writes <c>.br</c> and <c>.gz</c> sidecars for the demo site's text assets, the way a build step would, so
/// the precompressed path can be seen working (<c>curl -H 'Accept-Encoding: br' ...</c>).
/// </summary>
internal static class Precompressor
{
    private static readonly string[] Compressible = [".html", ".css", ".js", ".svg", ".json", ".txt"];

    public static int Run(string root)
    {
        int written = 0;
        foreach (string file in Directory.EnumerateFiles(root, "*", SearchOption.AllDirectories))
        {
            if (!Compressible.Contains(Path.GetExtension(file), StringComparer.OrdinalIgnoreCase))
            {
                continue;
            }

            written += Write(file, file + ".br", s => new BrotliStream(s, CompressionLevel.SmallestSize));
            written += Write(file, file + ".gz", s => new GZipStream(s, CompressionLevel.SmallestSize));
        }

        return written;
    }

    private static int Write(string source, string target, Func<Stream, Stream> compressor)
    {
        if (File.Exists(target) && File.GetLastWriteTimeUtc(target) >= File.GetLastWriteTimeUtc(source))
        {
            return 0;
        }

        string temp = target + ".tmp";
        using (FileStream input = File.OpenRead(source))
        using (FileStream output = File.Create(temp))
        using (Stream compressed = compressor(output))
        {
            input.CopyTo(compressed);
        }

        // Rename into place so a concurrent request never sees a half-written sidecar.
        File.Move(temp, target, overwrite: true);
        return 1;
    }
}
