namespace FastFiles.Benchmarks.Infrastructure;

/// <summary>Files of given sizes in a temporary folder, written once per suite so reads hit the page cache.</summary>
internal sealed class TestFiles : IDisposable
{
    private readonly string _root = Path.Combine(Path.GetTempPath(), "fastfiles-bench-" + Environment.ProcessId + "-" + Guid.NewGuid().ToString("N")[..8]);

    public TestFiles() => Directory.CreateDirectory(_root);

    public string Create(int size)
    {
        string path = Path.Combine(_root, size.ToString(System.Globalization.CultureInfo.InvariantCulture) + ".bin");
        if (!File.Exists(path))
        {
            byte[] data = new byte[size];
            new Random(size).NextBytes(data);
            File.WriteAllBytes(path, data);
        }

        return path;
    }

    public void Dispose()
    {
        try
        {
            Directory.Delete(_root, recursive: true);
        }
        catch (IOException)
        {
            // A leftover temp folder is harmless; never fail a benchmark run over it.
        }
    }
}
