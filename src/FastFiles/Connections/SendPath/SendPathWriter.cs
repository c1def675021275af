using System.IO.Pipelines;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading.Tasks.Sources;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.Extensions.Logging;

namespace FastFiles.Connections.SendPath;

/// <summary>
/// Kestrel's output on a plaintext connection, sent to the socket by us: Kestrel writes into pooled 16 KiB blocks and
/// each flush gathers them into one non-blocking sendmsg(2) on the calling thread (no hop to a send loop); only when
/// the socket buffer is full does the flush wait, on the runtime's epoll loop. A flush completes once every byte is
/// in the kernel, so the memory held per connection is what Kestrel wrote since its last flush, and no send is ever in
/// flight when Kestrel is not waiting for one. File bodies skip the blocks entirely: see the hole protocol in
/// <c>SendPathWriter.Holes.cs</c>.
/// </summary>
/// <remarks>
/// Only Kestrel's request processing writes here, one call at a time: Kestrel's <c>ConcurrentPipeWriter</c> buffers
/// its own writes while one of our flushes is pending, so no write overlaps a flush. The one other thread is the
/// batching send (<see cref="IThreadPoolWorkItem.Execute"/>): a flush made while a pipelined request is already in the
/// input is held back and sent from the thread pool, so the responses Kestrel writes meanwhile leave in the same
/// sendmsg(2). The queue of blocks and who sends it are guarded by <c>_sync</c>.
/// </remarks>
internal sealed partial class SendPathWriter : PipeWriter, IThreadPoolWorkItem, IValueTaskSource<FlushResult>
{
    // At most this many blocks per sendmsg(2); Kestrel flushes at least every 64 KiB (4 blocks), so more is rare.
    private const int MaxVectors = 64;

    private static readonly FlushResult Done = new(isCanceled: false, isCompleted: false);
    private static readonly FlushResult Closed = new(isCanceled: false, isCompleted: true);
    private static readonly FlushResult Canceled = new(isCanceled: true, isCompleted: false);

    // At most this many blocks wait for the batching send (512 KiB of 16 KiB blocks, 2 MiB if all are 64 KiB ones),
    // whatever the bound on bytes (_maxBatchBytes), for flushes too large to be packed into the block before them (see
    // PackTail): before packing, 50-byte writes held a 16 KiB block each (1,312 blocks, 20 MiB, on a connection that
    // stopped reading). 16 cost 16-deep pipelined 1 KiB responses 0.91x; 32 and 64 measured 0.99x and 0.97x, as the same
    // build against itself (benchmarks/results/batch-blocks-2026-11-27).
    internal const int MaxBatchBlocks = 32;

    // A flush's bytes are copied into the last queued block when they are at most this many (and fit): small responses
    // and streamed lines then share blocks instead of holding one each.
    private const int MaxPackedBytes = 4 * 1024;

    private readonly ConnectionContext _connection;
    private readonly Socket _socket;
    private readonly SafeSocketHandle _socketHandle;
    private readonly FastFilesMetrics _metrics;
    private readonly ILogger _logger;

    // At most this many bytes wait for the batching send: Kestrel's MaxResponseBufferSize, what Kestrel's own output
    // holds per connection before a flush waits (64 KiB by default; null: no bound on bytes, 0: no batching).
    private readonly long _maxBatchBytes;

    // Committed blocks not yet sent; the first may be partly sent (_sentInFirst).
    private readonly List<(byte[] Block, int Length)> _queued = [];
    private readonly Lock _sync = new();
    private long _queuedBytes;
    private int _sentInFirst;

    // Who sends: the batching send is queued to the thread pool (_batchQueued) or waiting for socket room
    // (_batchSending); Kestrel's side is in a send that may wait (_ownerSending). At most one of the two sends.
    private SendPathInput? _input;
    private bool _batchQueued;
    private bool _batchSending;
    private bool _ownerSending;

    // A Kestrel flush (or the final drain) waiting for the batching send to finish.
    private ManualResetValueTaskSourceCore<FlushResult> _batchDone = new() { RunContinuationsAsynchronously = true };
    private bool _waitingForBatch;

    // The one waiting for the batching send is a Kestrel flush (not a hole or the drain taking the socket).
    private bool _flushWaiting;
    private byte[]? _tail;
    private int _tailLength;
    private long _unflushed;

    private volatile bool _cancelRequested;
    private bool _failed;
    private bool _released;

    public SendPathWriter(ConnectionContext connection, Socket socket, ZeroCopySendFileOptions settings, long? maxResponseBufferSize, FastFilesMetrics metrics, ILogger logger)
    {
        _connection = connection;
        _maxBatchBytes = maxResponseBufferSize ?? long.MaxValue;
        _batchDone.Reset();
        _socket = socket;
        _socketHandle = socket.SafeHandle;
        _settings = settings;
        _metrics = metrics;
        _logger = logger;
    }

    /// <summary>Whether a send failed or the connection was torn down: nothing more goes out.</summary>
    public bool Failed => _failed;

    public override bool CanGetUnflushedBytes => true;

    public override long UnflushedBytes => _unflushed;

    public override Memory<byte> GetMemory(int sizeHint = 0)
    {
        if (_counting)
        {
            return HandOutScratch();
        }

        return Tail(sizeHint).AsMemory(_tailLength);
    }

    public override Span<byte> GetSpan(int sizeHint = 0)
    {
        if (_counting)
        {
            return HandOutScratch().Span;
        }

        return Tail(sizeHint).AsSpan(_tailLength);
    }

    public override void Advance(int bytes)
    {
        if (_scratchOut)
        {
            CountHoleBytes(bytes);
            return;
        }

        if (bytes < 0 || _tail is null || _tailLength + bytes > _tail.Length)
        {
            throw new ArgumentOutOfRangeException(nameof(bytes), bytes, "Advanced past the memory handed out.");
        }

        _tailLength += bytes;
        _unflushed += bytes;
    }

    private byte[] Tail(int sizeHint)
    {
        ObjectDisposedException.ThrowIf(_released, this);
        ArgumentOutOfRangeException.ThrowIfNegative(sizeHint);
        int needed = Math.Max(sizeHint, 1);
        if (_tail is not null && _tail.Length - _tailLength >= needed)
        {
            return _tail;
        }

        CommitTail();
        _tail = needed <= BlockPool.BlockSize ? BlockPool.Rent() : BlockPool.RentLarge(needed);
        _tailLength = 0;
        return _tail;
    }

    private void CommitTail()
    {
        if (_tail is not null)
        {
            lock (_sync)
            {
                QueueTail();
            }
        }
    }

    /// <summary>Appends the written tail to the queue; the caller holds <c>_sync</c>.</summary>
    private void QueueTail()
    {
        if (_tail is null)
        {
            return;
        }

        if (_tailLength > 0 && !PackTail())
        {
            _queued.Add((_tail, _tailLength));
            _queuedBytes += _tailLength;
        }
        else
        {
            BlockPool.Return(_tail);
        }

        _tail = null;
        _tailLength = 0;
    }

    /// <summary>
    /// Copies a small written tail to the end of the last queued block when it fits, so flushes made while bytes wait
    /// (the batching send, a full socket) share blocks. A send in flight covers only the block's bytes from before (its
    /// length was read under <c>_sync</c>), and its end goes through <see cref="Consume"/>, which keeps the entry while
    /// bytes are left in it. The caller holds <c>_sync</c>.
    /// </summary>
    private bool PackTail()
    {
        if (_tailLength > MaxPackedBytes || _queued.Count == 0)
        {
            return false;
        }

        (byte[] last, int length) = _queued[^1];
        if (last.Length - length < _tailLength)
        {
            return false;
        }

        _tail!.AsSpan(0, _tailLength).CopyTo(last.AsSpan(length));
        _queued[^1] = (last, length + _tailLength);
        _queuedBytes += _tailLength;
        return true;
    }

    /// <summary>
    /// Queues the written tail for a flush; false when nothing more goes out (the queue is then dropped, unless the
    /// batching send still holds it). The caller holds <c>_sync</c>.
    /// </summary>
    private bool CommitForSend()
    {
        QueueTail();
        if (!_failed && !_released)
        {
            return true;
        }

        if (!_batchSending)
        {
            DropQueued();
        }

        return false;
    }

    /// <summary>Gives the writer the connection's input, so a flush can see a pipelined request already waiting.</summary>
    public void AttachInput(SendPathInput input) => _input = input;

    public override ValueTask<FlushResult> FlushAsync(CancellationToken cancellationToken = default)
    {
        _unflushed = 0;
        lock (_sync)
        {
            // Read under the lock CancelPendingFlush sets it under: a cancel that found no flush waiting is this flush's.
            if (_cancelRequested)
            {
                _cancelRequested = false;
                return new ValueTask<FlushResult>(FlushCanceledLocked());
            }

            if (!CommitForSend())
            {
                return new ValueTask<FlushResult>(Closed);
            }

            // A hole is being set up: the headers wait so they leave in the same packet as the file's first bytes.
            if (_holding || _queued.Count == 0)
            {
                return new ValueTask<FlushResult>(Done);
            }

            if (_batchSending || _batchQueued)
            {
                // The batching send takes these bytes too: it sends until nothing is queued. Past the bound, wait for it
                // (or, if it has not started, send now: it will find nothing or only what comes later).
                if (WithinBatchBound())
                {
                    return new ValueTask<FlushResult>(Done);
                }

                if (_batchSending)
                {
                    return WaitBehindBatch(cancellationToken);
                }
            }
            else if (_input is { UnexaminedInput: true } && WithinBatchBound())
            {
                // Kestrel will parse the next pipelined request at once: one send on the thread pool takes this response
                // and those written before it runs, instead of one sendmsg(2) per response (16 deep pipelined 1 KiB
                // responses: see benchmarks/results/sendpath-batch-2026-11-24).
                _batchQueued = true;
                ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
                return new ValueTask<FlushResult>(Done);
            }

            if (SendQueuedInline(more: false))
            {
                return new ValueTask<FlushResult>(_failed ? Closed : Done);
            }

            // The socket is full: the rest leaves as a batching send (so CancelPendingFlush can give up this flush's
            // wait while the send goes on, and later flushes queue behind it instead of sending beside it).
            _batchSending = true;
            ValueTask<FlushResult> waiting = WaitBehindBatch(cancellationToken);
            _ = SendBatchSlowAsync();
            return waiting;
        }
    }

    // What a flush may leave to the batching send without waiting for it; the caller holds _sync.
    private bool WithinBatchBound() => _queuedBytes <= _maxBatchBytes && _queued.Count <= MaxBatchBlocks;

    /// <summary>A flush that waits for the batching send; the caller holds <c>_sync</c> and <c>_batchSending</c> is set.</summary>
    private ValueTask<FlushResult> WaitBehindBatch(CancellationToken cancellationToken)
    {
        _waitingForBatch = true;
        _flushWaiting = true;
        var behind = new ValueTask<FlushResult>(this, _batchDone.Version);
        return cancellationToken.CanBeCanceled ? WaitForBatchAsync(behind, cancellationToken) : behind;
    }

    // A flush behind the batching send is bound by its token as one waiting on the socket itself: the abort fails the
    // batch's send, which wakes this flush.
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<FlushResult> WaitForBatchAsync(ValueTask<FlushResult> behind, CancellationToken cancellationToken)
    {
        FlushResult result;
        using (AbortOnCancel(cancellationToken))
        {
            result = await behind;
        }

        cancellationToken.ThrowIfCancellationRequested();
        return result;
    }

    // A flush canceled by CancelPendingFlush: as a Pipe's, its bytes are still committed and go out (sent now as far as
    // the socket takes them, the rest by the batching send), and only the wait for them is given up.
    // The caller holds _sync.
    private FlushResult FlushCanceledLocked()
    {
        if (CommitForSend() && !_holding && !_batchSending && !_batchQueued && !_ownerSending && _queued.Count > 0 && !SendQueuedInline(more: false))
        {
            _batchQueued = true;
            ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
        }

        return Canceled;
    }

    /// <summary>The batching send: everything queued, from the thread pool, unless Kestrel's side is sending itself.</summary>
    void IThreadPoolWorkItem.Execute()
    {
        lock (_sync)
        {
            _batchQueued = false;
            // A flush that found the socket full may have started a batching send while this one was queued.
            if (_failed || _released || _holding || _ownerSending || _batchSending || _queued.Count == 0 || SendQueuedInline(more: false))
            {
                return;
            }

            _batchSending = true;
        }

        _ = SendBatchSlowAsync();
    }

    private async Task SendBatchSlowAsync()
    {
        try
        {
            await SendQueuedAsync();
        }
        finally
        {
            lock (_sync)
            {
                _batchSending = false;

                // A flush that came after the send last found the queue empty (but before this lock) left its bytes
                // to this send: they go out with the next one rather than waiting for Kestrel's next flush.
                if (_queued.Count > 0 && !_batchQueued && !_failed && !_released)
                {
                    _batchQueued = true;
                    ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
                }

                if (_waitingForBatch)
                {
                    _waitingForBatch = false;
                    _flushWaiting = false;
                    _batchDone.SetResult(_failed ? Closed : Done);
                }
            }
        }
    }

    /// <summary>
    /// Takes the socket for a send from Kestrel's side that may wait (the final drain, a file body), after a batching
    /// send in flight has finished. Paired with <see cref="EndOwnerSend"/>.
    /// </summary>
    private ValueTask BeginOwnerSendAsync()
    {
        lock (_sync)
        {
            if (!_batchSending)
            {
                _ownerSending = true;
                return default;
            }

            _waitingForBatch = true;
        }

        return WaitThenOwnAsync();
    }

    private async ValueTask WaitThenOwnAsync()
    {
        while (true)
        {
            await new ValueTask<FlushResult>(this, _batchDone.Version);
            lock (_sync)
            {
                if (!_batchSending)
                {
                    _ownerSending = true;
                    return;
                }

                _waitingForBatch = true;
            }
        }
    }

    private void EndOwnerSend()
    {
        lock (_sync)
        {
            _ownerSending = false;

            // Bytes held back for a batch while this send ran go out with the next one.
            if (_queued.Count > 0 && !_batchQueued && !_failed && !_released)
            {
                _batchQueued = true;
                ThreadPool.UnsafeQueueUserWorkItem(this, preferLocal: false);
            }
        }
    }

    FlushResult IValueTaskSource<FlushResult>.GetResult(short token)
    {
        try
        {
            return _batchDone.GetResult(token);
        }
        finally
        {
            _batchDone.Reset();
        }
    }

    ValueTaskSourceStatus IValueTaskSource<FlushResult>.GetStatus(short token) => _batchDone.GetStatus(token);

    void IValueTaskSource<FlushResult>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
        => _batchDone.OnCompleted(continuation, state, token, flags);

    /// <summary>
    /// Sends everything queued, waiting for the socket when it is full. Never throws; a failure sets <see cref="Failed"/>.
    /// The caller is the one sender (<c>_ownerSending</c> or <c>_batchSending</c>), so the first block stays queued while
    /// its send waits.
    /// </summary>
    private async ValueTask SendQueuedAsync()
    {
        while (true)
        {
            byte[] block;
            int from;
            int length;
            lock (_sync)
            {
                if (_failed || _queued.Count == 0 || SendQueuedInline(more: false))
                {
                    return;
                }

                (block, length) = _queued[0];
                from = _sentInFirst;
            }

            try
            {
                // Sends the rest of the first block once the socket has room (the runtime loops until all of it is sent).
                await _socket.SendAsync(block.AsMemory(from, length - from), SocketFlags.None);
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException or NotSupportedException or InvalidOperationException)
            {
                Fail(ex);
                return;
            }

            lock (_sync)
            {
                // Bytes packed into this block while it was sent stay queued (see PackTail).
                Consume(length - from);
            }
        }
    }

    /// <summary>
    /// One non-blocking sendmsg(2) per round over the queued blocks until all are sent (true) or the socket is full
    /// (false). With <paramref name="more"/>, MSG_MORE tells TCP that more follows (the file), so headers are not sent
    /// alone. A failure sets <see cref="Failed"/> and returns true. Called with <c>_sync</c> held.
    /// </summary>
    private unsafe bool SendQueuedInline(bool more)
    {
        int flags = Native.MSG_DONTWAIT | Native.MSG_NOSIGNAL | (more ? Native.MSG_MORE : 0);
        Native.IoVector* vectors = stackalloc Native.IoVector[MaxVectors];
        while (_queued.Count > 0)
        {
            int count = Math.Min(_queued.Count, MaxVectors);
            for (int i = 0; i < count; i++)
            {
                (byte[] block, int length) = _queued[i];
                int skip = i == 0 ? _sentInFirst : 0;
                // Blocks are pinned (BlockPool), so their addresses are stable.
                vectors[i].Base = (byte*)Unsafe.AsPointer(ref MemoryMarshal.GetArrayDataReference(block)) + skip;
                vectors[i].Length = (nuint)(length - skip);
            }

            Native.MessageHeader message = default;
            message.Vectors = vectors;
            message.VectorCount = (nuint)count;

            nint sent;
            int errno = 0;
            bool added = false;
            try
            {
                _socketHandle.DangerousAddRef(ref added);
                sent = Native.SendMessage((int)_socketHandle.DangerousGetHandle(), &message, flags);
                if (sent < 0)
                {
                    errno = Marshal.GetLastPInvokeError();
                }
            }
            catch (ObjectDisposedException ex)
            {
                Fail(ex);
                return true;
            }
            finally
            {
                if (added)
                {
                    _socketHandle.DangerousRelease();
                }
            }

            if (sent < 0)
            {
                if (errno == Native.EINTR)
                {
                    continue;
                }

                if (errno == Native.EAGAIN)
                {
                    return false;
                }

                Fail(Native.SendError(errno));
                return true;
            }

            Consume(sent);
        }

        return true;
    }

    private void Consume(long sent)
    {
        _queuedBytes -= sent;
        while (sent > 0)
        {
            (byte[] block, int length) = _queued[0];
            int left = length - _sentInFirst;
            if (sent < left)
            {
                _sentInFirst += (int)sent;
                return;
            }

            sent -= left;
            _queued.RemoveAt(0);
            _sentInFirst = 0;
            BlockPool.Return(block);
        }
    }

    // While a flush waits (for the socket or behind the batching send), its token ends the connection.
    private CancellationTokenRegistration AbortOnCancel(CancellationToken cancellationToken)
        => cancellationToken.CanBeCanceled
            ? cancellationToken.UnsafeRegister(
                static s => ((SendPathWriter)s!)._connection.Abort(new ConnectionAbortedException("A flush waiting for the socket was canceled by its token.")), this)
            : default;

    // As a Pipe's: a flush waiting now completes at once as canceled (its bytes still go out, by the batching send); with
    // none waiting, the next flush is canceled.
    public override void CancelPendingFlush()
    {
        lock (_sync)
        {
            if (_flushWaiting)
            {
                _flushWaiting = false;
                _waitingForBatch = false;
                _batchDone.SetResult(Canceled);
                return;
            }

            // No flush waits: the next one is canceled, as a Pipe's. Set under the lock, where a flush decides to wait.
            _cancelRequested = true;
        }
    }

    public override void Complete(Exception? exception = null)
    {
        // What is still queued is sent by the connection middleware before it returns (DrainAsync).
        CommitTail();
    }

    /// <summary>Sends what Kestrel left unflushed, unless the connection failed. Called once Kestrel is done with the connection.</summary>
    public ValueTask DrainAsync()
    {
        CommitTail();
        lock (_sync)
        {
            if (!_batchSending && (_failed || _queued.Count == 0))
            {
                return default;
            }
        }

        return DrainSlowAsync();
    }

    private async ValueTask DrainSlowAsync()
    {
        await BeginOwnerSendAsync();
        try
        {
            await SendQueuedAsync();
        }
        finally
        {
            lock (_sync)
            {
                _ownerSending = false;
            }
        }
    }

    /// <summary>Returns every block to the pool. Called last, when nothing can write or send any more.</summary>
    public void Release()
    {
        lock (_sync)
        {
            _released = true;
            CommitTail();
            DropQueued();
            if (_tail is not null)
            {
                BlockPool.Return(_tail);
                _tail = null;
            }
        }

        _holeWait?.Dispose();
        lock (_rateSync)
        {
            _rateArmed = false;
            _rateTimer?.Dispose();
            _rateTimer = null;
        }
    }

    private void DropQueued()
    {
        foreach ((byte[] block, _) in _queued)
        {
            BlockPool.Return(block);
        }

        _queued.Clear();
        _queuedBytes = 0;
        _sentInFirst = 0;
    }

    /// <summary>
    /// The connection cannot carry on (client reset, socket closed, file truncated): drop what is queued and abort it,
    /// as Kestrel's own transport does when a send fails, so the response cannot look complete.
    /// </summary>
    private void Fail(Exception reason)
    {
        if (_failed)
        {
            return;
        }

        _failed = true;
        lock (_sync)
        {
            // Only the one sender fails a send, so no send of ours is using a queued block.
            DropQueued();
        }

        Log.SendPathSendFailed(_logger, _connection.ConnectionId, reason.Message);
        _connection.Abort(new ConnectionAbortedException("The send path could not send to the socket.", reason));
    }
}
