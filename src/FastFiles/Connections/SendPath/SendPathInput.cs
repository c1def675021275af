using System.Buffers;
using System.IO.Pipelines;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;
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
internal sealed class SendPathInput : PipeReader, IValueTaskSource<ReadResult>
{
    private readonly PipeReader inner;
    private readonly Action _innerReadCompleted;
    private ReadOnlySequence<byte> _buffer;

    // A read that waits completes through this source, so that its exception can be mapped; allocation-free, and the
    // continuation runs inline where the inner read completes, as it did without us.
    private ManualResetValueTaskSourceCore<ReadResult> _read;
    private ConfiguredValueTaskAwaitable<ReadResult>.ConfiguredValueTaskAwaiter _innerRead;
    private volatile ConnectionAbortedException? _resetAbort;

    public SendPathInput(PipeReader inner)
    {
        this.inner = inner;
        _innerReadCompleted = OnInnerReadCompleted;
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

        // A read that waits is handed over through our source (no allocation). The buffer it
        // returns is not known, so the advance after it reports nothing unexamined; the next reads of a pipelined
        // burst complete at once and are seen.
        _buffer = default;
        _read.Reset();
        _innerRead = read.ConfigureAwait(false).GetAwaiter();
        if (read.IsCompleted)
        {
            // Failed or canceled at once: its exception is mapped before the caller sees it.
            OnInnerReadCompleted();
        }
        else
        {
            _innerRead.UnsafeOnCompleted(_innerReadCompleted);
        }

        return new ValueTask<ReadResult>(this, _read.Version);
    }

    private void OnInnerReadCompleted()
    {
        ConfiguredValueTaskAwaitable<ReadResult>.ConfiguredValueTaskAwaiter awaiter = _innerRead;
        _innerRead = default;
        try
        {
            _read.SetResult(awaiter.GetResult());
        }
        catch (ConnectionAbortedException ex) when (Reset(ex) is { } reset)
        {
            _read.SetException(reset);
        }
        catch (Exception ex)
        {
            _read.SetException(ex);
        }
    }

    private Exception? Reset(ConnectionAbortedException ex) => ReferenceEquals(ex, _resetAbort) ? ex.InnerException : null;

    ReadResult IValueTaskSource<ReadResult>.GetResult(short token) => _read.GetResult(token);

    ValueTaskSourceStatus IValueTaskSource<ReadResult>.GetStatus(short token) => _read.GetStatus(token);

    void IValueTaskSource<ReadResult>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
        => _read.OnCompleted(continuation, state, token, flags);

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
