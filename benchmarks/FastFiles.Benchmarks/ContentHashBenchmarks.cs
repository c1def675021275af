using BenchmarkDotNet.Attributes;
using FastFiles.Benchmarks.Infrastructure;
using FastFiles.Files;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Benchmarks;

/// <summary>
/// What a content-hash ETag costs, once per file version: hashing bytes the cache already holds (small files, on the
/// request that builds the entry) and hashing a file from the page cache (larger files, in the background). Divide
/// the mean by the size in MiB for the cost per MiB. The stamp ETag (formatting mtime and length) is the baseline.
/// </summary>
[MemoryDiagnoser]
public class ContentHashBenchmarks
{
    private readonly TestFiles _files = new();
    private byte[] _bytes = null!;
    private SafeFileHandle _handle = null!;
    private FileStamp _stamp;

    [Params(4 * 1024, 64 * 1024, 1024 * 1024, 16 * 1024 * 1024)]
    public int Size { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        string path = _files.Create(Size);
        _bytes = File.ReadAllBytes(path);
        _handle = FileVersion.OpenHandle(path);
        _stamp = FileStamp.FromHandle(_handle);
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _handle.Dispose();
        _files.Dispose();
    }

    [Benchmark(Baseline = true)]
    public string StampETag() => FileVersion.FormatETag(_stamp.ModifiedTicks, _stamp.Length, null);

    [Benchmark]
    public string? HashOfCachedBytes() => ContentHash.Of(_bytes).ETag;

    [Benchmark]
    public string? HashOfFile() => ContentHash.Compute(_handle, _stamp, CancellationToken.None);
}
