using System.Security.Cryptography;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>A temporary directory of files with known contents, deleted on dispose.</summary>
public sealed class TestFiles : IDisposable
{
    public TestFiles()
    {
        Root = Path.Combine(Path.GetTempPath(), "fastfiles-tests", Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(Root);
    }

    public string Root { get; }

    /// <summary>Writes <paramref name="length"/> deterministic pseudo-random bytes and returns them.</summary>
    public byte[] Create(string relativePath, int length, int seed = 1)
    {
        var bytes = new byte[length];
        new Random(seed ^ length).NextBytes(bytes);
        Write(relativePath, bytes);
        return bytes;
    }

    public void Write(string relativePath, byte[] bytes)
    {
        string path = PathOf(relativePath);
        Directory.CreateDirectory(Path.GetDirectoryName(path)!);
        File.WriteAllBytes(path, bytes);
    }

    public string PathOf(string relativePath) => Path.Combine(Root, relativePath.TrimStart('/'));

    public static string Sha256(byte[] bytes) => Convert.ToHexString(SHA256.HashData(bytes));

    public void Dispose()
    {
        try
        {
            Directory.Delete(Root, recursive: true);
        }
        catch (IOException)
        {
        }
    }
}
