using System.IO.Pipelines;

namespace FastFiles.Benchmarks.Infrastructure;

/// <summary>
/// A response-shaped pipe: 4 KiB blocks from <see cref="BlockMemoryPool"/>, Kestrel's 64 KiB pause threshold, and
/// a reader that consumes everything as soon as it is flushed, standing in for the socket.
/// </summary>
/// <remarks>
/// Both schedulers are inline so the drain runs on the flushing thread: the measurement then contains the copy
/// and pipe bookkeeping only, with no thread-pool hop whose cost would depend on the machine's load.
/// </remarks>
internal sealed class DrainedPipe : IAsyncDisposable
{
    private readonly Pipe _pipe;
    private readonly Task _drain;

    public DrainedPipe()
    {
        _pipe = new Pipe(KestrelShapedOptions());
        _drain = DrainAsync(_pipe.Reader);
        // One stream for the life of the pipe, as Kestrel keeps one HttpResponseStream per connection.
        Stream = _pipe.Writer.AsStream(leaveOpen: true);
    }

    public PipeWriter Writer => _pipe.Writer;

    /// <summary>Kestrel-shaped output pipe options: 4 KiB pinned blocks, 64 KiB pause / 32 KiB resume, inline schedulers.</summary>
    public static PipeOptions KestrelShapedOptions() => new(
        pool: new BlockMemoryPool(),
        readerScheduler: PipeScheduler.Inline,
        writerScheduler: PipeScheduler.Inline,
        pauseWriterThreshold: 64 * 1024,
        resumeWriterThreshold: 32 * 1024,
        minimumSegmentSize: BlockMemoryPool.BlockSize,
        useSynchronizationContext: false);

    /// <summary>The stream view of <see cref="Writer"/> that the stock SendFile fallback writes to.</summary>
    public Stream Stream { get; }

    private async Task DrainAsync(PipeReader reader)
    {
        while (true)
        {
            ReadResult result = await reader.ReadAsync();
            reader.AdvanceTo(result.Buffer.End);
            if (result.IsCompleted)
            {
                break;
            }
        }

        await reader.CompleteAsync();
    }

    public async ValueTask DisposeAsync()
    {
        await Stream.DisposeAsync();
        await _pipe.Writer.CompleteAsync();
        await _drain;
    }
}
