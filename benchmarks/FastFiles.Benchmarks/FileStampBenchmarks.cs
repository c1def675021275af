using BenchmarkDotNet.Attributes;
using FastFiles.Benchmarks.Infrastructure;
using FastFiles.Files;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Benchmarks;

/// <summary>
/// What one look at an open file costs: the statx(2) behind <see cref="FileStamp.FromHandle"/>, which a body sent from
/// a descriptor pays before it is sent (is it still the version the headers describe?) and, for a longer body, again
/// before its final chunk. Compared with the work a 64 KiB response costs the server in all (about 17 us on the load
/// harness), this says what a look saved per response is worth.
/// </summary>
[MemoryDiagnoser]
public class FileStampBenchmarks
{
    private readonly TestFiles _files = new();
    private SafeFileHandle _handle = null!;
    private FileStamp _stamp;
    private string _path = null!;

    [GlobalSetup]
    public void Setup()
    {
        _path = _files.Create(64 * 1024);
        _handle = FileVersion.OpenHandle(_path);
        _stamp = FileStamp.FromHandle(_handle);
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _handle.Dispose();
        _files.Dispose();
    }

    [Benchmark]
    public long FromHandle() => FileStamp.FromHandle(_handle).Length;

    [Benchmark]
    public bool StillMatches() => _stamp.StillMatches(_handle);

    /// <summary>
    /// A version opened for one response (results without a root, <c>UseFastSendFile</c>, a cache miss): statx, open,
    /// statx of the descriptor, the validators and their header strings, close.
    /// </summary>
    [Benchmark]
    public long OpenVersion()
    {
        using FileVersion version = FileVersion.Open(_path, contentEncoding: null);
        return version.LastModified.UtcTicks;
    }
}
