using System.IO.Pipelines;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
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
/// its own writes while one of our flushes is pending, so no write overlaps a flush.
/// </remarks>
internal sealed partial class SendPathWriter : PipeWriter
{
    // At most this many blocks per sendmsg(2); Kestrel flushes at least every 64 KiB (4 blocks), so more is rare.
    private const int MaxVectors = 64;

    private static readonly FlushResult Done = new(isCanceled: false, isCompleted: false);
    private static readonly FlushResult Closed = new(isCanceled: false, isCompleted: true);
    private static readonly FlushResult Canceled = new(isCanceled: true, isCompleted: false);

    private readonly ConnectionContext _connection;
    private readonly Socket _socket;
    private readonly SafeSocketHandle _socketHandle;
    private readonly FastFilesMetrics _metrics;
    private readonly ILogger _logger;

    // Committed blocks not yet sent; the first may be partly sent (_sentInFirst).
    private readonly List<(byte[] Block, int Length)> _queued = [];
    private int _sentInFirst;
    private byte[]? _tail;
    private int _tailLength;
    private long _unflushed;

    private volatile bool _cancelRequested;
    private bool _failed;
    private bool _released;

    public SendPathWriter(ConnectionContext connection, Socket socket, ZeroCopySendFileOptions settings, FastFilesMetrics metrics, ILogger logger)
    {
        _connection = connection;
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
        if (_tail is null)
        {
            return;
        }

        if (_tailLength > 0)
        {
            _queued.Add((_tail, _tailLength));
        }
        else
        {
            BlockPool.Return(_tail);
        }

        _tail = null;
        _tailLength = 0;
    }

    public override ValueTask<FlushResult> FlushAsync(CancellationToken cancellationToken = default)
    {
        if (_cancelRequested)
        {
            _cancelRequested = false;
            return new ValueTask<FlushResult>(Canceled);
        }

        CommitTail();
        _unflushed = 0;
        if (_failed || _released)
        {
            DropQueued();
            return new ValueTask<FlushResult>(Closed);
        }

        // A hole is being set up: the headers wait so they leave in the same packet as the file's first bytes.
        if (_holding || _queued.Count == 0)
        {
            return new ValueTask<FlushResult>(Done);
        }

        if (SendQueuedInline(more: false))
        {
            return new ValueTask<FlushResult>(_failed ? Closed : Done);
        }

        return FlushSlowAsync();
    }

    // The socket buffer is full: wait for it on the runtime's epoll loop, then go on inline.
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<FlushResult> FlushSlowAsync()
    {
        await SendQueuedAsync();
        if (_cancelRequested)
        {
            _cancelRequested = false;
            return Canceled;
        }

        return _failed ? Closed : Done;
    }

    /// <summary>Sends everything queued, waiting for the socket when it is full. Never throws; a failure sets <see cref="Failed"/>.</summary>
    private async ValueTask SendQueuedAsync()
    {
        while (!_failed && _queued.Count > 0 && !SendQueuedInline(more: false))
        {
            (byte[] block, int length) = _queued[0];
            try
            {
                // Sends the rest of the first block once the socket has room (the runtime loops until all of it is sent).
                await _socket.SendAsync(block.AsMemory(_sentInFirst, length - _sentInFirst), SocketFlags.None);
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException or NotSupportedException or InvalidOperationException)
            {
                Fail(ex);
                return;
            }

            _queued.RemoveAt(0);
            _sentInFirst = 0;
            BlockPool.Return(block);
        }
    }

    /// <summary>
    /// One non-blocking sendmsg(2) per round over the queued blocks until all are sent (true) or the socket is full
    /// (false). With <paramref name="more"/>, MSG_MORE tells TCP that more follows (the file), so headers are not sent
    /// alone. A failure sets <see cref="Failed"/> and returns true.
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

                Fail(new SocketException(errno));
                return true;
            }

            Consume(sent);
        }

        return true;
    }

    private void Consume(long sent)
    {
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

    public override void CancelPendingFlush() => _cancelRequested = true;

    public override void Complete(Exception? exception = null)
    {
        // What is still queued is sent by the connection middleware before it returns (DrainAsync).
        CommitTail();
    }

    /// <summary>Sends what Kestrel left unflushed, unless the connection failed. Called once Kestrel is done with the connection.</summary>
    public ValueTask DrainAsync()
    {
        CommitTail();
        return _failed || _queued.Count == 0 ? default : SendQueuedAsync();
    }

    /// <summary>Returns every block to the pool. Called last, when nothing can write or send any more.</summary>
    public void Release()
    {
        _released = true;
        CommitTail();
        DropQueued();
        if (_tail is not null)
        {
            BlockPool.Return(_tail);
            _tail = null;
        }

        _holeWait?.Dispose();
        _holeTimer?.Dispose();
    }

    private void DropQueued()
    {
        foreach ((byte[] block, _) in _queued)
        {
            BlockPool.Return(block);
        }

        _queued.Clear();
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
        DropQueued();
        Log.SendPathSendFailed(_logger, _connection.ConnectionId, reason.Message);
        _connection.Abort(new ConnectionAbortedException("The send path could not send to the socket.", reason));
    }
}
