using System.Buffers;
using System.Diagnostics;
using System.IO.Pipelines;
using FastFiles.Diagnostics;
using Microsoft.Extensions.Logging;

namespace FastFiles.Connections;

/// <summary>
/// One staged connection: Kestrel writes into <see cref="Output"/> (a bounded pipe on the connection's memory pool);
/// a drain loop on the thread pool copies the bytes, in order, into the TLS pipe writer and flushes it.
/// </summary>
internal sealed class OutputStageConnection : IDuplexPipe
{
    private readonly IDuplexPipe _tls;
    private readonly Pipe _pipe;
    private readonly StageWriter _writer;
    private readonly LingeringReader _input;
    private readonly Http2TlsOutputStageStatistics _statistics;
    private readonly FastFilesMetrics _metrics;
    private readonly ILogger _logger;
    private readonly string _connectionId;

    // Bytes in the pipe that Kestrel has flushed and the drain has not yet consumed; written by both sides.
    private long _backlog;

    // On HTTP/1.x connections only: held by the drain around each write into TLS and by a delayed client-certificate
    // negotiation (TlsExclusiveAsync), which writes to the same SslStream. Without the stage the app's own flush has
    // finished before it asks for the certificate; with it the drain may still be writing (SslStream refuses a second
    // write while one is pending). HTTP/2 never renegotiates, so its connections go without.
    private readonly SemaphoreSlim? _tlsGate;

    public OutputStageConnection(
        IDuplexPipe tls, MemoryPool<byte> pool, long bound, Http2TlsOutputStageStatistics statistics, FastFilesMetrics metrics, ILogger logger, string connectionId,
        bool exclusiveTls = false)
    {
        _tlsGate = exclusiveTls ? new SemaphoreSlim(1, 1) : null;
        _tls = tls;
        _statistics = statistics;
        _metrics = metrics;
        _logger = logger;
        _connectionId = connectionId;
        _pipe = new Pipe(new PipeOptions(
            pool: pool,
            // The drain runs on the thread pool so that Kestrel's flush only signals it and returns.
            readerScheduler: PipeScheduler.ThreadPool,
            writerScheduler: PipeScheduler.Inline,
            pauseWriterThreshold: bound,
            resumeWriterThreshold: Math.Max(bound / 2, 1),
            useSynchronizationContext: false));
        _writer = new StageWriter(this);
        _input = new LingeringReader(tls.Input);
    }

    public PipeReader Input => _input;

    public PipeWriter Output => _writer;

    public Task StartDraining() => DrainAsync();

    /// <summary>
    /// Runs <paramref name="operation"/> (which writes to the TLS stream itself) while the drain writes nothing: after
    /// the drain's write in progress, before its next one. Only on connections made with exclusive TLS access.
    /// </summary>
    public async Task<T> TlsExclusiveAsync<T>(Func<CancellationToken, Task<T>> operation, CancellationToken cancellationToken)
    {
        await _tlsGate!.WaitAsync(cancellationToken);
        try
        {
            return await operation(cancellationToken);
        }
        finally
        {
            _tlsGate.Release();
        }
    }

    public void CompleteWriter() => _pipe.Writer.Complete();

    /// <summary>
    /// Once both sides are done: whatever Kestrel flushed that never reached TLS (an aborted connection) is no longer
    /// buffered anywhere, so it leaves the <c>fastfiles.tls_stage.buffered</c> total.
    /// </summary>
    public void ReleaseBacklog()
    {
        long abandoned = Interlocked.Exchange(ref _backlog, 0);
        if (abandoned != 0)
        {
            _metrics.StageFlushed(-abandoned);
        }
    }

    /// <summary>
    /// Once Kestrel is done, reads and drops whatever the client still sends (WINDOW_UPDATE, PING, ...) until
    /// <paramref name="drained"/> finishes, then completes the TLS input. Closing a socket with unread input makes the
    /// kernel send RST, and a client that gets RST may drop response bytes it has not read yet; while the stage is still
    /// sending the tail, the client is still sending frames about it.
    /// </summary>
    public async Task LingerAsync(Task drained)
    {
        PipeReader tls = _tls.Input;
        Task discard = DiscardInputAsync(tls);
        try
        {
            await drained;
        }
        finally
        {
            tls.CancelPendingRead();
            await discard;
            await tls.CompleteAsync(_input.CompletionError);
        }
    }

    private static async Task DiscardInputAsync(PipeReader tls)
    {
        try
        {
            while (true)
            {
                ReadResult result = await tls.ReadAsync();
                tls.AdvanceTo(result.Buffer.End);
                if (result.IsCompleted || result.IsCanceled)
                {
                    return;
                }
            }
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException or InvalidOperationException)
        {
            // The connection is already closing; there is nothing left to protect.
        }
    }

    private async Task DrainAsync()
    {
        // Start on the thread pool: the first read may complete synchronously and the caller must not run the loop.
        await Task.Yield();

        PipeReader reader = _pipe.Reader;
        PipeWriter tls = _tls.Output;
        Exception? error = null;
        try
        {
            while (true)
            {
                ReadResult result = await reader.ReadAsync();
                ReadOnlySequence<byte> buffer = result.Buffer;

                // One record's worth at a time, consumed from the stage pipe only once TLS has taken it: bytes handed to
                // the TLS writer stay counted against the pipe's pause threshold, so the stage never holds its bound in
                // the pipe and another bound in the TLS writer behind a slow reader (at most one record is in both).
                ReadOnlySequence<byte> chunk = buffer.Slice(0, Math.Min(buffer.Length, TlsRecordWriter.RecordSize));
                long length = chunk.Length;
                if (length > 0)
                {
                    if (_tlsGate is not null)
                    {
                        await _tlsGate.WaitAsync();
                    }

                    // The stage never cancels a TLS flush (see StageWriter.CancelPendingFlush); should one report IsCanceled
                    // anyway, its bytes are committed, so flush them again rather than leave a response's tail in the TLS
                    // writer. A write cancelled part-way has aborted the connection and reports completion instead.
                    FlushResult flush;
                    try
                    {
                        CopyInRecordSizedSpans(chunk, tls);
                        while ((flush = await tls.FlushAsync()).IsCanceled && !flush.IsCompleted)
                        {
                        }
                    }
                    finally
                    {
                        _tlsGate?.Release();
                    }

                    if (flush.IsCompleted)
                    {
                        // The TLS side is gone: stop, and complete our reader so Kestrel's next flush reports completion.
                        break;
                    }
                }

                reader.AdvanceTo(chunk.End);
                if (length > 0)
                {
                    Interlocked.Add(ref _backlog, -length);
                    _statistics.Forwarded(length);
                    _metrics.StageForwarded(length);
                }

                if (result.IsCompleted && length == buffer.Length)
                {
                    break;
                }
            }
        }
        catch (Exception ex)
        {
            // Includes the exception Kestrel completed its writer with (an abort): ReadAsync rethrows it.
            error = ex;
            Log.TlsWriteFailed(_logger, _connectionId, ex);
        }
        finally
        {
            // Kestrel's pending or next flush observes this: completion, or the exception rethrown.
            await reader.CompleteAsync(error);
            await CompleteTlsWriterAsync(tls, error);
        }
    }

    // Kestrel's TLS writer hands SslStream one write per buffer segment, and SslStream makes one TLS record (and one
    // transport flush) per write. Asking for spans of up to a full record (RFC 8446 5.1: 16 KiB) instead of the pool's
    // 4 KiB blocks gives fewer, fuller records for the same bytes.
    private static void CopyInRecordSizedSpans(in ReadOnlySequence<byte> buffer, PipeWriter tls)
    {
        ReadOnlySequence<byte> rest = buffer;
        while (!rest.IsEmpty)
        {
            int want = (int)Math.Min(rest.Length, TlsRecordWriter.RecordSize);
            Span<byte> span = tls.GetSpan(want);
            int count = Math.Min(want, span.Length);
            rest.Slice(0, count).CopyTo(span);
            tls.Advance(count);
            rest = rest.Slice(count);
        }
    }

    private static async ValueTask CompleteTlsWriterAsync(PipeWriter tls, Exception? error)
    {
        try
        {
            // Completing without an error flushes what is left; HttpsConnectionMiddleware completing it again is a no-op.
            await tls.CompleteAsync(error);
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException)
        {
            // The connection is already broken; Kestrel has been told through our reader.
        }
    }

    /// <summary>
    /// Kestrel's view of the input: the TLS reader itself, except that completing it is deferred to
    /// <see cref="LingerAsync"/> so the stage can keep reading while the response tail is sent.
    /// </summary>
    private sealed class LingeringReader(PipeReader inner) : PipeReader
    {
        public Exception? CompletionError { get; private set; }

        public override bool TryRead(out ReadResult result) => inner.TryRead(out result);

        public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default) => inner.ReadAsync(cancellationToken);

        public override void AdvanceTo(SequencePosition consumed) => inner.AdvanceTo(consumed);

        public override void AdvanceTo(SequencePosition consumed, SequencePosition examined) => inner.AdvanceTo(consumed, examined);

        public override void CancelPendingRead() => inner.CancelPendingRead();

        public override void Complete(Exception? exception = null) => CompletionError ??= exception;
    }

    /// <summary>
    /// Kestrel's view of the output: the stage pipe's writer, counting bytes for the bound statistics.
    /// </summary>
    private sealed class StageWriter : PipeWriter
    {
        private readonly OutputStageConnection _owner;
        private readonly PipeWriter _inner;
        private long _unflushed;

        public StageWriter(OutputStageConnection owner)
        {
            _owner = owner;
            _inner = owner._pipe.Writer;
        }

        public override bool CanGetUnflushedBytes => true;

        public override long UnflushedBytes => _inner.UnflushedBytes;

        public override void Advance(int bytes)
        {
            _inner.Advance(bytes);
            _unflushed += bytes;
        }

        public override Memory<byte> GetMemory(int sizeHint = 0) => _inner.GetMemory(sizeHint);

        public override Span<byte> GetSpan(int sizeHint = 0) => _inner.GetSpan(sizeHint);

        public override ValueTask<FlushResult> FlushAsync(CancellationToken cancellationToken = default)
        {
            long batch = _unflushed;
            _unflushed = 0;
            if (batch > 0)
            {
                long buffered = Interlocked.Add(ref _owner._backlog, batch);
                _owner._statistics.Flushed(buffered, batch);
                _owner._metrics.StageFlushed(batch);
            }

            return _inner.FlushAsync(cancellationToken);
        }

        public override ValueTask<FlushResult> WriteAsync(ReadOnlyMemory<byte> source, CancellationToken cancellationToken = default)
        {
            _inner.Write(source.Span);
            _unflushed += source.Length;
            return FlushAsync(cancellationToken);
        }

        // Only Kestrel's own wait (the stage pipe's flush) is released. The drain flushes TLS again after a cancelled flush
        // anyway, so cancelling its TLS write gains nothing, and cancelling it part-way breaks the TLS stream: the stream
        // writer rewrites the record it was writing (bytes sent twice), TlsRecordWriter aborts the connection.
        public override void CancelPendingFlush() => _inner.CancelPendingFlush();

        public override void Complete(Exception? exception = null)
        {
            Debug.Assert(_unflushed >= 0);
            _inner.Complete(exception);
        }

        public override ValueTask CompleteAsync(Exception? exception = null) => _inner.CompleteAsync(exception);
    }
}
