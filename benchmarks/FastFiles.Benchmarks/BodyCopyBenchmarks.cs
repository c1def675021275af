using System.Buffers;
using BenchmarkDotNet.Attributes;
using FastFiles.Benchmarks.Infrastructure;
using FastFiles.Files;
using FastFiles.IO;
using Microsoft.AspNetCore.Builder;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Benchmarks;

/// <summary>
/// File to response body, per request: open, copy every byte into a Kestrel-shaped output pipe, close.
/// The baseline is what Kestrel's <c>SendFileFallback</c> does for <c>UseStaticFiles</c> and <c>Results.File</c>:
/// a 16 KiB-buffered asynchronous <see cref="FileStream"/> copied through a <see cref="Stream"/> over the pipe.
/// </summary>
/// <remarks>
/// <see cref="BufferSize"/> only affects FastFiles. It asks the design question from KESTREL-NOTES: 4 KiB reads
/// stay on the 4 KiB block pool and are batched per 64 KiB flush, while a 64 KiB <c>GetMemory</c> is larger than a
/// block, so the pipe serves it from <c>ArrayPool</c>. The baseline repeats per buffer size so every row has a ratio.
/// </remarks>
[MemoryDiagnoser]
public class BodyCopyBenchmarks
{
    // SendFileFallback's FileStream buffer and copy buffer.
    private const int StockBufferSize = 16 * 1024;

    private readonly TestFiles _files = new();
    private DrainedPipe _pipe = null!;
    private string _path = null!;
    private long _synchronousReadThreshold;
    private FileStamp _stamp;

    [Params(1024, 4 * 1024, 16 * 1024, 64 * 1024, 1024 * 1024)]
    public int Size { get; set; }

    [Params(4 * 1024, 64 * 1024)]
    public int BufferSize { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        _path = _files.Create(Size);
        _pipe = new DrainedPipe();
        // FastFiles' own default, so the 1 MiB case takes the asynchronous-read path as it would in production.
        _synchronousReadThreshold = new FastFilesOptions().SynchronousReadThreshold;
        // The version the headers would describe (read when the file is opened for a response, outside this copy).
        using SafeFileHandle handle = File.OpenHandle(_path);
        _stamp = FileStamp.FromHandle(handle);
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _pipe.DisposeAsync().AsTask().GetAwaiter().GetResult();
        _files.Dispose();
    }

    [Benchmark(Baseline = true, Description = "Stock SendFileFallback (FileStream -> Stream)")]
    public async Task Stock()
    {
        var file = new FileStream(_path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite, StockBufferSize, FileOptions.Asynchronous | FileOptions.SequentialScan);
        await using (file)
        {
            await CopyAsync(file, _pipe.Stream, Size);
        }
    }

    [Benchmark(Description = "FastFiles FileBodyWriter (file -> PipeWriter)")]
    public Task FastFiles() => WriteBodyAsync(stamp: null);

    // What a response pays to make a body torn by a write in place end short: one fstat before the last batch leaves.
    [Benchmark(Description = "FastFiles FileBodyWriter, stamp checked before the last batch")]
    public Task FastFilesChecked() => WriteBodyAsync(_stamp);

    private async Task WriteBodyAsync(FileStamp? stamp)
    {
        using SafeFileHandle handle = File.OpenHandle(_path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        FileSendStatus status = await FileBodyWriter.WriteAsync(_pipe.Writer, handle, stamp, 0, Size, BufferSize, _synchronousReadThreshold, CancellationToken.None);
        if (status != FileSendStatus.Completed)
        {
            throw new InvalidOperationException("Copy ended with " + status);
        }
    }

    // The shape of the stock count-limited copy: one rented buffer, read then write, the stream's WriteAsync
    // copying into the pipe and flushing each time.
    private static async Task CopyAsync(Stream source, Stream destination, long count)
    {
        byte[] buffer = ArrayPool<byte>.Shared.Rent(StockBufferSize);
        try
        {
            while (count > 0)
            {
                int read = await source.ReadAsync(buffer.AsMemory(0, (int)Math.Min(buffer.Length, count)));
                if (read == 0)
                {
                    throw new InvalidOperationException("Unexpected end of file.");
                }

                await destination.WriteAsync(buffer.AsMemory(0, read));
                count -= read;
            }
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }
}
