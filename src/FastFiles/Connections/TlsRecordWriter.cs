using System.Buffers;
using System.Collections.Concurrent;
using System.IO.Pipelines;
using System.Net.Security;
using System.Runtime.CompilerServices;

namespace FastFiles.Connections;

/// <summary>
/// Kestrel's output on a TLS connection, written to the connection's <see cref="SslStream"/> in whole-record buffers:
/// Kestrel writes into 16 KiB blocks (RFC 8446 5.1: the largest record payload) from a pool of their own, and each
/// flush hands the stream one block at a time, so a 64 KiB body is four records instead of sixteen.
/// </summary>
/// <remarks>
/// It replaces the <c>StreamPipeWriter</c> that <c>HttpsConnectionMiddleware</c> puts in front of the stream, which
/// takes its buffers from Kestrel's 4 KiB block pool and writes one record per block; asking that writer for larger
/// buffers moves them to <c>ArrayPool&lt;byte&gt;.Shared</c>, which runs dry under many busy connections (measured:
/// 13 KB allocated per 64 KiB response with 32 connections). Only Kestrel writes here; the replaced writer stays
/// empty and is completed with this one so the TLS middleware's own shutdown runs as before.
/// </remarks>
internal sealed class TlsRecordWriter : PipeWriter
{
    /// <summary>RFC 8446 5.1: 2^14 bytes of plaintext per record.</summary>
    public const int RecordSize = 16 * 1024;

    private static readonly FlushResult Done = new(isCanceled: false, isCompleted: false);
    private static readonly FlushResult Canceled = new(isCanceled: true, isCompleted: false);
    private static readonly FlushResult Closed = new(isCanceled: false, isCompleted: true);

    private readonly Stream _ssl;
    private readonly PipeWriter _replaced;
    private readonly Action<Exception>? _abort;
    private readonly List<(byte[] Buffer, int Length)> _filled = [];
    private byte[]? _current;
    private int _currentLength;
    private long _unflushed;
    private CancellationTokenSource? _flushCancellation;
    private volatile bool _cancelRequested;
    private volatile bool _flushing;

    // CancelPendingFlush during a flush: taken between records (a record cut part-way breaks the TLS stream), or by
    // cancelling the stream's own flush once every record is written whole. _cancelSync orders the two.
    private readonly object _cancelSync = new();
    private volatile bool _cancelBetweenRecords;
    private bool _inStreamFlush;
    private volatile bool _completed;

    // Complete while a flush runs (a caller that breaks the one-writer rule, or the connection middleware's finally): the
    // flush stops after the write under way and returns the listed blocks itself, so none goes back to the pool twice.
    private bool _dropAfterFlush;

    // A write to the stream was cancelled part-way: a record may be cut short, so nothing more can go out.
    private bool _broken;

    /// <param name="ssl">The connection's <see cref="SslStream"/> (any stream in tests).</param>
    /// <param name="replaced">The writer Kestrel had; completed when this one is.</param>
    /// <param name="abort">Ends the connection (<c>ConnectionContext.Abort</c>) when a cancelled write leaves the TLS stream unusable.</param>
    public TlsRecordWriter(Stream ssl, PipeWriter replaced, Action<Exception>? abort = null)
    {
        _ssl = ssl;
        _replaced = replaced;
        _abort = abort;
    }

    /// <summary>Whether a cancelled write left the stream unusable (the connection was aborted; bytes are dropped since).</summary>
    public bool Broken => _broken;

    public override bool CanGetUnflushedBytes => true;

    public override long UnflushedBytes => _unflushed;

    public override void Advance(int bytes)
    {
        ObjectDisposedException.ThrowIf(_completed, this);
        if (bytes < 0 || _current is null || _currentLength + bytes > _current.Length)
        {
            throw new ArgumentOutOfRangeException(nameof(bytes), bytes, "Advanced past the memory handed out.");
        }

        _currentLength += bytes;
        _unflushed += bytes;
    }

    public override Memory<byte> GetMemory(int sizeHint = 0) => Current(sizeHint).AsMemory(_currentLength);

    public override Span<byte> GetSpan(int sizeHint = 0) => Current(sizeHint).AsSpan(_currentLength);

    private byte[] Current(int sizeHint)
    {
        ObjectDisposedException.ThrowIf(_completed, this);
        ArgumentOutOfRangeException.ThrowIfNegative(sizeHint);
        int needed = Math.Max(sizeHint, 1);
        if (_current is not null && _current.Length - _currentLength >= needed)
        {
            return _current;
        }

        Commit();
        // A request larger than a record (a file body read from disk asks for 64 KiB at a time) gets a buffer from the
        // shared array pool, returned with the blocks once written; SslStream splits it into records. A fresh array here
        // cost about 1 MiB allocated per 1 MiB response over TLS.
        _current = needed <= RecordSize ? BlockPool.Rent() : ArrayPool<byte>.Shared.Rent(needed);
        _currentLength = 0;
        return _current;
    }

    private void Commit()
    {
        if (_current is null)
        {
            return;
        }

        if (_currentLength > 0)
        {
            _filled.Add((_current, _currentLength));
        }
        else
        {
            BlockPool.Return(_current);
        }

        _current = null;
        _currentLength = 0;
    }

    public override ValueTask<FlushResult> FlushAsync(CancellationToken cancellationToken = default)
    {
        ObjectDisposedException.ThrowIf(_completed, this);
        if (_broken)
        {
            Commit();
            DropFilled();
            return new ValueTask<FlushResult>(Closed);
        }

        if (_cancelRequested)
        {
            _cancelRequested = false;
            return new ValueTask<FlushResult>(Canceled);
        }

        Commit();
        return FlushCoreAsync(cancellationToken);
    }

    // Pooled state machine: a flush that waits on the socket allocates nothing in steady state.
    // Cancellation never loses a byte silently. CancelPendingFlush reports IsCanceled once the record under way is
    // written whole (or at once during the stream's own flush), the buffers not yet written staying queued for the next
    // flush, and the connection goes on (StreamPipeWriter, which cancels the write under way, repeats bytes or breaks
    // the TLS stream there). The caller's token cuts the write under way: that may leave a record short, so the
    // connection is aborted, nothing more is sent, and the token throws, as StreamPipeWriter's does, which is how
    // Kestrel learns to abort.
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<FlushResult> FlushCoreAsync(CancellationToken cancellationToken)
    {
        CancellationTokenSource cancellation = _flushCancellation ??= new CancellationTokenSource();
        using CancellationTokenRegistration linked = cancellationToken.UnsafeRegister(static s => ((CancellationTokenSource)s!).Cancel(), cancellation);
        lock (_cancelSync)
        {
            if (_completed)
            {
                return Closed;
            }

            _flushing = true;
        }

        int sent = 0;
        bool writing = false;
        try
        {
            for (; sent < _filled.Count; sent++)
            {
                if (_completed)
                {
                    _filled.RemoveRange(0, sent);
                    return Closed;
                }

                cancellation.Token.ThrowIfCancellationRequested();
                if (_cancelBetweenRecords && TakeCancelBetweenRecords())
                {
                    _filled.RemoveRange(0, sent);
                    _unflushed = Queued();
                    return Canceled;
                }

                (byte[] buffer, int length) = _filled[sent];
                writing = true;
                await _ssl.WriteAsync(buffer.AsMemory(0, length), cancellation.Token);
                writing = false;
                BlockPool.Return(buffer);
            }

            _filled.Clear();
            sent = 0;
            _unflushed = _currentLength;

            // Every record is written whole by now: a cancel during the stream's flush leaves it usable.
            lock (_cancelSync)
            {
                if (_cancelBetweenRecords)
                {
                    _cancelBetweenRecords = false;
                    return Canceled;
                }

                _inStreamFlush = true;
            }

            try
            {
                await _ssl.FlushAsync(cancellation.Token);
            }
            finally
            {
                lock (_cancelSync)
                {
                    _inStreamFlush = false;
                }
            }

            return Done;
        }
        catch (Exception ex)
        {
            // The buffers already written went back to the pool: only the rest stay listed (Complete returns those), so
            // no block is returned twice and handed to two connections at once. A write that failed or was cancelled
            // part-way may have cut a record short: nothing more goes out.
            bool canceled = ex is OperationCanceledException && cancellation.IsCancellationRequested;
            _filled.RemoveRange(0, sent);
            if (writing)
            {
                Break(canceled ? new OperationCanceledException("A TLS write was cancelled part-way; the record it was writing may be cut short.") : ex);
            }
            else
            {
                _unflushed = Queued();
            }

            if (!canceled)
            {
                throw;
            }

            _flushCancellation = null;
            cancellation.Dispose();
            _cancelRequested = false;
            if (cancellationToken.IsCancellationRequested)
            {
                throw;
            }

            return _broken ? Closed : Canceled;
        }
        finally
        {
            bool drop;
            lock (_cancelSync)
            {
                _flushing = false;
                drop = _dropAfterFlush;
                _dropAfterFlush = false;
            }

            if (drop)
            {
                ReleaseAll();
            }
        }
    }

    private long Queued()
    {
        long queued = _currentLength;
        foreach ((_, int length) in _filled)
        {
            queued += length;
        }

        return queued;
    }

    private void Break(Exception reason)
    {
        _broken = true;
        DropFilled();
        _abort?.Invoke(reason);
    }

    public override ValueTask<FlushResult> WriteAsync(ReadOnlyMemory<byte> source, CancellationToken cancellationToken = default)
    {
        this.Write(source.Span);
        return FlushAsync(cancellationToken);
    }

    public override void CancelPendingFlush()
    {
        // A flush in progress ends as canceled after the record under way, or at once in the stream's own flush (see
        // FlushCoreAsync); otherwise the next flush reports cancellation and keeps the bytes, as a Pipe does.
        lock (_cancelSync)
        {
            if (!_flushing)
            {
                _cancelRequested = true;
            }
            else if (_inStreamFlush && _flushCancellation is { } cancellation)
            {
                cancellation.Cancel();
            }
            else
            {
                _cancelBetweenRecords = true;
            }
        }
    }

    private bool TakeCancelBetweenRecords()
    {
        lock (_cancelSync)
        {
            bool take = _cancelBetweenRecords;
            _cancelBetweenRecords = false;
            return take;
        }
    }

    /// <summary>
    /// Completes after sending what is still buffered (without an error), as StreamPipeWriter does: the HTTP/2 TLS
    /// output stage completes this writer after its last flush may have been cancelled.
    /// </summary>
    public override async ValueTask CompleteAsync(Exception? exception = null)
    {
        if (!_completed && exception is null && !_broken)
        {
            Commit();
            if (_filled.Count > 0)
            {
                try
                {
                    await FlushCoreAsync(CancellationToken.None);
                }
                catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException or NotSupportedException)
                {
                    // The connection is gone: what is left is dropped below.
                }
            }
        }

        Complete(exception);
    }

    public override void Complete(Exception? exception = null)
    {
        bool flushing;
        lock (_cancelSync)
        {
            if (_completed)
            {
                return;
            }

            _completed = true;
            flushing = _flushing;
            _dropAfterFlush = flushing;
        }

        if (!flushing)
        {
            ReleaseAll();
        }

        _replaced.Complete(exception);
    }

    // Once completed: every block back to the pool (after the flush under way, if any) and the flush token disposed.
    private void ReleaseAll()
    {
        Commit();
        DropFilled();
        _flushCancellation?.Dispose();
        _flushCancellation = null;
    }

    private void DropFilled()
    {
        foreach ((byte[] buffer, _) in _filled)
        {
            BlockPool.Return(buffer);
        }

        _filled.Clear();
        _unflushed = 0;
    }

    /// <summary>
    /// Record-sized blocks shared by all connections. Keeps at most <see cref="MaxRetained"/> blocks (16 MiB); beyond that
    /// returned blocks are left to the GC, so a burst cannot pin memory for good.
    /// </summary>
    internal static class BlockPool
    {
        public const int MaxRetained = 1024;

        private static readonly ConcurrentQueue<byte[]> Blocks = new();
        private static int s_retained;

        public static int Retained => Volatile.Read(ref s_retained);

        public static byte[] Rent()
        {
            if (Blocks.TryDequeue(out byte[]? block))
            {
                Interlocked.Decrement(ref s_retained);
                return block;
            }

            return GC.AllocateUninitializedArray<byte>(RecordSize);
        }

        public static void Return(byte[] block)
        {
            if (block.Length != RecordSize)
            {
                // Only a buffer larger than a record, rented from the shared pool (its sizes are powers of two above it).
                ArrayPool<byte>.Shared.Return(block);
                return;
            }

            if (Interlocked.Increment(ref s_retained) <= MaxRetained)
            {
                Blocks.Enqueue(block);
            }
            else
            {
                Interlocked.Decrement(ref s_retained);
            }
        }
    }
}
