using System.Buffers;
using System.IO.Pipelines;
using System.Runtime.CompilerServices;
using Microsoft.AspNetCore.Connections;

namespace FastFiles.Connections.SendPath;

/// <summary>
/// Kestrel's input on a send-path connection, passed through untouched. It only notes whether the reader's last
/// <see cref="AdvanceTo(SequencePosition, SequencePosition)"/> left bytes it has not examined: a pipelined request that
/// has already arrived, which Kestrel will parse next without waiting. That is when <see cref="SendPathWriter"/> may
/// hold a flush back so several responses leave in one send, as Kestrel's own send loop batches them.
/// It also rethrows a client reset that the send path saw as the <see cref="ConnectionResetException"/> Kestrel's own
/// transport gives the app (see <see cref="SurfaceResetFor"/>).
/// </summary>
internal sealed class SendPathInput : PipeReader
{
    private readonly PipeReader inner;
    private ReadOnlySequence<byte> _buffer;
    private volatile ConnectionAbortedException? _resetAbort;

    public SendPathInput(PipeReader inner)
    {
        this.inner = inner;
    }

    /// <summary>
    /// True between an advance that left unexamined bytes and the next read; false while the reader holds a buffer
    /// (the static lane flushes its own batches then) and after an advance that examined everything it was given.
    /// </summary>
    public bool UnexaminedInput { get; private set; }

    /// <summary>
    /// The send path aborts the connection with <paramref name="abort"/>, whose inner exception is the client's reset:
    /// reads that fail with it throw that <see cref="ConnectionResetException"/> instead.
    /// </summary>
    public void SurfaceResetFor(ConnectionAbortedException abort)
    {
        if (abort.InnerException is ConnectionResetException)
        {
            _resetAbort = abort;
        }
    }

    public override bool TryRead(out ReadResult result)
    {
        UnexaminedInput = false;
        bool read;
        try
        {
            read = inner.TryRead(out result);
        }
        catch (ConnectionAbortedException ex) when (Reset(ex) is { } reset)
        {
            throw reset;
        }

        if (!read)
        {
            return false;
        }

        _buffer = result.Buffer;
        return true;
    }

    public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
    {
        UnexaminedInput = false;
        ValueTask<ReadResult> read;
        try
        {
            read = inner.ReadAsync(cancellationToken);
        }
        catch (ConnectionAbortedException ex) when (Reset(ex) is { } reset)
        {
            throw reset;
        }

        if (read.IsCompletedSuccessfully)
        {
            ReadResult result = read.Result;
            _buffer = result.Buffer;
            return new ValueTask<ReadResult>(result);
        }

        // A read that waits (or failed at once) is awaited in a pooled async method: the transport's pipe then schedules
        // that method's box, which the thread pool queues without allocating (an Action of ours cost 32 B per request).
        // The buffer it returns is not known, so the advance after it reports nothing unexamined; the next reads of a
        // pipelined burst complete at once and are seen.
        _buffer = default;
        return AwaitReadAsync(read);
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<ReadResult> AwaitReadAsync(ValueTask<ReadResult> read)
    {
        try
        {
            return await read.ConfigureAwait(false);
        }
        catch (ConnectionAbortedException ex) when (Reset(ex) is { } reset)
        {
            throw reset;
        }
    }

    private Exception? Reset(ConnectionAbortedException ex) => ReferenceEquals(ex, _resetAbort) ? ex.InnerException : null;

    public override void AdvanceTo(SequencePosition consumed) => AdvanceTo(consumed, consumed);

    public override void AdvanceTo(SequencePosition consumed, SequencePosition examined)
    {
        // Measured before the inner advance, which may return the buffer's segments to their pool. An advance
        // without a buffer seen here (after a read that waited) may still be valid for the inner reader.
        ReadOnlySequence<byte> buffer = _buffer;
        _buffer = default;
        UnexaminedInput = !buffer.IsEmpty && buffer.GetOffset(examined) - buffer.GetOffset(buffer.Start) < buffer.Length;
        inner.AdvanceTo(consumed, examined);
    }

    public override void CancelPendingRead() => inner.CancelPendingRead();

    public override void Complete(Exception? exception = null)
    {
        UnexaminedInput = false;
        inner.Complete(exception);
    }

    public override ValueTask CompleteAsync(Exception? exception = null)
    {
        UnexaminedInput = false;
        return inner.CompleteAsync(exception);
    }
}
