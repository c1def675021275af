using System.Buffers;
using System.IO.Pipelines;

namespace FastFiles.Connections.SendPath;

/// <summary>
/// Kestrel's input on a send-path connection, passed through untouched. It only notes whether the reader's last
/// <see cref="AdvanceTo(SequencePosition, SequencePosition)"/> left bytes it has not examined: a pipelined request that
/// has already arrived, which Kestrel will parse next without waiting. That is when <see cref="SendPathWriter"/> may
/// hold a flush back so several responses leave in one send, as Kestrel's own send loop batches them.
/// </summary>
internal sealed class SendPathInput(PipeReader inner) : PipeReader
{
    private ReadOnlySequence<byte> _buffer;

    /// <summary>
    /// True between an advance that left unexamined bytes and the next read; false while the reader holds a buffer
    /// (the static lane flushes its own batches then) and after an advance that examined everything it was given.
    /// </summary>
    public bool UnexaminedInput { get; private set; }

    public override bool TryRead(out ReadResult result)
    {
        UnexaminedInput = false;
        if (!inner.TryRead(out result))
        {
            return false;
        }

        _buffer = result.Buffer;
        return true;
    }

    public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default)
    {
        UnexaminedInput = false;
        ValueTask<ReadResult> read = inner.ReadAsync(cancellationToken);
        if (read.IsCompletedSuccessfully)
        {
            ReadResult result = read.Result;
            _buffer = result.Buffer;
            return new ValueTask<ReadResult>(result);
        }

        // A read that waits is handed back as is: no continuation of ours on every request's path. The buffer it
        // returns is not known, so the advance after it reports nothing unexamined; the next reads of a pipelined
        // burst complete at once and are seen.
        _buffer = default;
        return read;
    }

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
