using System.Diagnostics;
using System.IO.Pipelines;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using FastFiles.IO;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.Net.Http.Headers;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Connections.SendPath;

/// <summary>
/// The hole protocol: a file body that Kestrel counts but never sees. The response's headers are flushed into this
/// writer and held; Kestrel's body writer is then advanced by the body's length over a window this writer hands out
/// (so Kestrel's Content-Length accounting is satisfied without a byte being written); then the held headers go out
/// with MSG_MORE and the body follows with sendfile(2) from the file's own descriptor.
/// </summary>
/// <remarks>
/// It relies on Kestrel's HTTP/1.1 output being in pass-through once a flush has completed synchronously (its
/// <c>ConcurrentPipeWriter</c> only buffers while a flush is pending), so the body writer's GetMemory and Advance reach
/// this writer. That is checked on every response, not assumed: the memory Kestrel hands out must be our window and
/// every advance must arrive here; if the first window is not ours the response is copied instead, and if anything
/// goes wrong after Kestrel has counted bytes, the connection is aborted, never completed with wrong bytes.
/// </remarks>
internal sealed partial class SendPathWriter : IZeroCopyFileSender
{
    // One window for every connection: Kestrel hands it back to us and is advanced over it. Nothing writes into it and
    // its bytes are never sent; its size only sets how many GetMemory/Advance rounds a body takes (1 per MiB).
    private static readonly byte[] Scratch = new byte[1024 * 1024];

    // Linux sends at most 0x7ffff000 bytes per sendfile(2) call; 1 GiB keeps each call well inside it.
    private const long MaxSendFileChunk = 1L << 30;

    private static readonly TimeSpan MaxTimerWait = TimeSpan.FromDays(24);

    // The least a wait for socket room is given time for at the minimum rate: Kestrel's MaxResponseBufferSize, the most
    // its own output holds back.
    private const double RateWindow = 64 * 1024;

    // The kernel says what the peer acknowledged (TCP_INFO): a TCP socket whose first look found it.
    private bool _acksUnknown;

    private bool AcksKnown => !_acksUnknown && _socket.ProtocolType == ProtocolType.Tcp;

    // With a stamp, this many bytes at the end of a body wait for one more look at the file. Any size makes a torn body
    // end short; one copy batch, as the copy path holds back, keeps the extra sendfile(2) call rare for small bodies.
    private const long FinalChunk = 64 * 1024;

    private readonly ZeroCopySendFileOptions _settings;

    // Flushes keep the headers back while a hole is set up.
    private bool _holding;

    // GetMemory hands out Scratch, and Advance counts hole bytes.
    private bool _counting;
    private bool _scratchOut;
    private long _holeCounted;

    private SendFileArgs? _holeWait;
    // The minimum data rate's timer for waits for socket room (ArmRateDeadline): what must be acknowledged per period.
    private readonly Lock _rateSync = new();
    private Timer? _rateTimer;
    private bool _rateArmed;
    private long _rateDue;
    private long _rateAcked;
    private long _rateArmedAt;
    private MinDataRate? _rate;
    private volatile bool _rateTooLow;

    public ValueTask<FileSendStatus?> TrySendAsync(IFeatureCollection features, SafeFileHandle file, FileStamp? stamp, bool stampChecked, long offset, long count, CancellationToken cancellationToken)
        => TrySendAsync(features, file, stamp, stampChecked, offset, count, multipart: null, cancellationToken);

    public ValueTask<FileSendStatus?> TrySendMultipartAsync(IFeatureCollection features, SafeFileHandle file, FileStamp? stamp, bool stampChecked, MultipartByteRanges body, CancellationToken cancellationToken)
    {
        // Each part costs a sendmsg(2) and a sendfile(2), as a body of its own: parts shorter than MinimumLength on
        // average are copied.
        if (!body.PartsReach(_settings.MinimumLength))
        {
            Fallback("below_minimum", body.ContentLength);
            return new ValueTask<FileSendStatus?>((FileSendStatus?)null);
        }

        return TrySendAsync(features, file, stamp, stampChecked, 0, body.ContentLength, body, cancellationToken);
    }

    // With a multipart body, count is the whole body's length (every part's header block and bytes, and the closing
    // delimiter) and offset is unused: each part names its own range.
    private ValueTask<FileSendStatus?> TrySendAsync(
        IFeatureCollection features, SafeFileHandle file, FileStamp? stamp, bool stampChecked, long offset, long count, MultipartByteRanges? multipart, CancellationToken cancellationToken)
    {
        if (Check(features, stamp, count, out PipeWriter? writer) is { } reason)
        {
            Fallback(reason, count);
            return new ValueTask<FileSendStatus?>((FileSendStatus?)null);
        }

        lock (_sync)
        {
            if (_batchSending)
            {
                // Earlier pipelined responses are still leaving from the thread pool; this body is copied behind them.
                Fallback("batch_in_flight", count);
                return new ValueTask<FileSendStatus?>((FileSendStatus?)null);
            }

            _ownerSending = true;
        }

        return SendOwnedAsync(features, writer!, file, stamp, stampChecked, offset, count, multipart, cancellationToken);
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<FileSendStatus?> SendOwnedAsync(
        IFeatureCollection features, PipeWriter writer, SafeFileHandle file, FileStamp? stamp, bool stampChecked, long offset, long count, MultipartByteRanges? multipart, CancellationToken cancellationToken)
    {
        try
        {
            return await SendAsync(features, writer, file, stamp, stampChecked, offset, count, multipart, cancellationToken);
        }
        finally
        {
            EndOwnerSend();
        }
    }

    public void Copied(long count) => _metrics.SendPathSent(count, sendfile: false);

    // MinimumLength applies to every body; a cached one must also reach CachedMinimumLength.
    public long CachedMinimumLength => Math.Max(_settings.CachedMinimumLength, _settings.MinimumLength);

    /// <summary>Why this response cannot be a hole, or null when it can.</summary>
    private string? Check(IFeatureCollection features, FileStamp? stamp, long count, out PipeWriter? writer)
    {
        writer = null;
        if (_failed || _released)
        {
            return "connection_closed";
        }

        if (s_sendFileRefused)
        {
            return "sendfile_refused";
        }

        if (count < _settings.MinimumLength)
        {
            return "below_minimum";
        }

        if (features.Get<IHttpRequestFeature>() is not { } request)
        {
            return "protocol";
        }

        if (!HttpProtocol.IsHttp11(request.Protocol) && !HttpProtocol.IsHttp10(request.Protocol))
        {
            return HttpProtocol.IsHttp2(request.Protocol) ? "http2" : "protocol";
        }

        if (!HttpMethods.IsGet(request.Method))
        {
            return "method";
        }

        if (features.Get<ITlsConnectionFeature>() is not null)
        {
            return "tls";
        }

        if (features.Get<IHttpResponseBodyFeature>() is not { } body || !KestrelFeatures.IsKestrelBody(body))
        {
            return "body_replaced";
        }

        // RFC 9112 6.3: with Transfer-Encoding the body is chunked and Content-Length does not apply.
        IHeaderDictionary headers = features.Get<IHttpResponseFeature>()!.Headers;
        if (headers.ContentLength != count || headers.ContainsKey(HeaderNames.TransferEncoding))
        {
            return "not_content_length";
        }

        if (stamp is { } version && RecentlyWritten(version))
        {
            return "recently_modified";
        }

        writer = body.Writer;
        return null;
    }

    /// <summary>
    /// Whether a body of this version is to be copied rather than sent with sendfile(2): its modification time is within
    /// <see cref="ZeroCopySendFileOptions.RecentWriteWindow"/> of now. A file still being written has such a time; one
    /// being served from a deploy does not.
    /// </summary>
    public bool RecentlyWritten(FileStamp stamp)
    {
        long window = _settings.RecentWriteWindow.Ticks;
        if (window <= 0)
        {
            return false;
        }

        long age = DateTime.UtcNow.Ticks - stamp.ModifiedTicks;
        return age < window && age > -window;
    }

    private void Fallback(string reason, long count)
    {
        _metrics.SendPathFallback(reason);
        Log.SendPathFallback(_logger, _connection.ConnectionId, reason, count);
    }

    private async ValueTask<FileSendStatus?> SendAsync(
        IFeatureCollection features, PipeWriter writer, SafeFileHandle file, FileStamp? stamp, bool stampChecked, long offset, long count, MultipartByteRanges? multipart, CancellationToken cancellationToken)
    {
        MinDataRate? rate = features.Get<IHttpMinResponseDataRateFeature>()?.MinDataRate;
        _holding = true;
        try
        {
            // Kestrel writes the headers (if it has not yet) and flushes them to us; we hold them. A flush that
            // completes synchronously leaves Kestrel's writer in pass-through.
            ValueTask<FlushResult> flushing = writer.FlushAsync(cancellationToken);
            stampChecked &= flushing.IsCompleted;
            FlushResult flushed = await flushing;
            if (flushed.IsCanceled || flushed.IsCompleted || _failed)
            {
                return FileSendStatus.ClientDisconnected;
            }

            _counting = true;
            _holeCounted = 0;
            long left = count;
            while (left > 0)
            {
                Memory<byte> window = writer.GetMemory();
                if (!MemoryMarshal.TryGetArray(window, out ArraySegment<byte> segment) || segment.Array != Scratch)
                {
                    _counting = false;
                    if (left == count)
                    {
                        // Nothing counted yet: the copy path can still write this body.
                        Fallback("writer_shape", count);
                        return null;
                    }

                    Fail(new InvalidOperationException("Kestrel's writer stopped handing out the send path's window."));
                    return FileSendStatus.ClientDisconnected;
                }

                int n = (int)Math.Min(left, window.Length);
                writer.Advance(n);
                left -= n;
                if (_holeCounted != count - left)
                {
                    // Kestrel counted bytes that did not reach us: they cannot be sent.
                    Fail(new InvalidOperationException("An advance of Kestrel's writer did not reach the send path."));
                    return FileSendStatus.ClientDisconnected;
                }
            }
        }
        catch (Exception ex) when (IsDisconnect(ex, cancellationToken))
        {
            // The client left while Kestrel was being set up for the hole: nothing more can be sent.
            return FileSendStatus.ClientDisconnected;
        }
        finally
        {
            _holding = false;
            _counting = false;
            _scratchOut = false;
        }

        return await SendHoleAsync(file, stamp, stampChecked, offset, count, multipart, rate);
    }

    // As the copy path: Kestrel's writer throws these once the connection is torn down (a reset, an abort).
    private bool IsDisconnect(Exception ex, CancellationToken cancellationToken) => ex switch
    {
        ConnectionResetException or ConnectionAbortedException => true,
        OperationCanceledException or InvalidOperationException or ObjectDisposedException => cancellationToken.IsCancellationRequested || _failed,
        _ => false,
    };

    private Memory<byte> HandOutScratch()
    {
        _scratchOut = true;
        return Scratch;
    }

    private void CountHoleBytes(int bytes)
    {
        if ((uint)bytes > (uint)Scratch.Length)
        {
            throw new ArgumentOutOfRangeException(nameof(bytes), bytes, "Advanced past the memory handed out.");
        }

        _scratchOut = false;
        _holeCounted += bytes;
    }

    /// <summary>
    /// The held bytes, then the body. <paramref name="stampChecked"/>: the caller has just compared the descriptor with
    /// <paramref name="stamp"/> and nothing has waited since; if the headers also leave without a wait, a body that is
    /// all final chunk skips the look before it: one statx(2) less per response, 0.35 us against the lane's 17-21 us per
    /// 64 KiB response (benchmarks/results/statx-2026-11-26). The window the second look would narrow is one sendmsg(2).
    /// A multipart body is its parts in turn, each part's header block copied and sent with MSG_MORE and its range sent
    /// with sendfile(2), then the closing delimiter; only its last part waits for the second look, as on the copy path.
    /// </summary>
    private async ValueTask<FileSendStatus?> SendHoleAsync(
        SafeFileHandle file, FileStamp? stamp, bool stampChecked, long offset, long count, MultipartByteRanges? multipart, MinDataRate? rate)
    {
        bool fileAdded = false;
        FileStream? reopened = null;
        bool copying = false;
        bool refused = false;
        long copiedBytes = 0;
        long fileBytes = 0;
        long position = 0;
        long end = 0;
        bool counted = false;
        try
        {
            // Held for the whole body: a cached handle disposed meanwhile is closed only after our last sendfile.
            file.DangerousAddRef(ref fileAdded);

            // A part's range follows the earlier parts' sends: the caller's look is that much older.
            stampChecked &= multipart is null;
            int partCount = multipart?.Parts.Length ?? 1;
            long started = Stopwatch.GetTimestamp();
            for (int part = 0; part < partCount && !_failed; part++)
            {
                long from = offset;
                long to = offset + count;
                if (multipart is not null)
                {
                    MultipartByteRanges.Part next = multipart.Parts[part];
                    QueueCopy(next.Header.Span);
                    (from, to) = (next.Range.Start, next.Range.End);
                }

                // MSG_MORE: the held headers (or a part's header block) wait for the range's first bytes, so both leave
                // in one packet.
                ValueTask held = SendHeldAsync(more: true, rate, fileBytes, started);
                stampChecked &= held.IsCompleted;
                await held;

                // Set only now, so that a body cut short counts no byte of a range it had not started.
                (position, end) = (from, to);
                fileBytes += end - position;
                long rangeStart = position;
                // Sends go up to stop: with a stamp, first to the final chunk of the last range, which waits for one
                // more look at the file.
                long stop = stamp is null || part < partCount - 1 ? end : Math.Max(position, end - FinalChunk);
                while (!_failed && position < end)
                {
                    if (position == stop)
                    {
                        // Only with a stamp, before the final chunk. sendfile(2) queues page-cache references, so bytes
                        // already queued are read when they leave: a rewrite seen here may have torn them, and the
                        // connection ends without its last bytes. A rewrite after this look can still reach bytes in the
                        // socket buffers.
                        if (!(stampChecked && position == rangeStart) && !stamp!.Value.StillMatches(file))
                        {
                            return Changed();
                        }

                        stop = end;
                    }

                    switch (refused ? SendFileOutcome.WouldBlock : SendFileInline(file, ref position, stop))
                    {
                        case SendFileOutcome.Sent:
                            break;
                        case SendFileOutcome.Refused:
                            // The rest of this body by copy, from where sendfile stopped (the headers have left).
                            refused = copying = true;
                            Fallback("sendfile_refused", end - position);
                            break;
                        case SendFileOutcome.EndOfFile:
                            return Truncated();
                        case SendFileOutcome.WouldBlock:
                            if (reopened is null && !copying)
                            {
                                reopened = TryReopen(file, out string? why);
                                if (reopened is null)
                                {
                                    // The headers have left: the rest of this body goes by copy, as the copy path would
                                    // send it, rather than ending a response the copy path would complete.
                                    copying = true;
                                    Fallback(why!, end - position);
                                }
                            }

                            if (copying)
                            {
                                int copied = await CopyChunkAsync(file, position, stop, end, rate, fileBytes - (end - position), started);
                                if (copied < 0)
                                {
                                    return Truncated();
                                }

                                position += copied;
                                copiedBytes += copied;
                                break;
                            }

                            // Without acknowledgements to look at (a Unix domain socket, no TCP_INFO) a wait's deadline is
                            // the time its bytes take at the rate, so each wait asks for one window: a client that stops
                            // reading is cut off as on Kestrel's path, not after the time the whole file would take.
                            int chunk = (int)Math.Min(stop - position, AcksKnown ? MaxSendFileChunk : (long)RateWindow);
                            long sent = await SendFileSlowAsync(reopened!, position, chunk, rate, fileBytes - (end - position), started);
                            if (sent > 0)
                            {
                                position += sent;
                            }

                            if (sent < chunk)
                            {
                                // The runtime checks the file's length before sending: a shorter file fails the send.
                                if (!_rateTooLow && RandomAccess.GetLength(file) < end)
                                {
                                    return Truncated();
                                }

                                // Past the rate's deadline before the first wait, no wait (and no _holeWait) exists.
                                SocketError error = _rateTooLow ? SocketError.TimedOut : _holeWait?.SocketError ?? SocketError.ConnectionAborted;
                                Fail(new SocketException((int)(error == SocketError.Success ? SocketError.ConnectionAborted : error)));
                            }

                            break;
                        default:
                            break;
                    }
                }
            }

            if (multipart is not null && !_failed)
            {
                QueueCopy(multipart.Closing.Span);
                await SendHeldAsync(more: false, rate, fileBytes, started);
            }

            if (_failed)
            {
                return FileSendStatus.ClientDisconnected;
            }

            // What was not file bytes by sendfile (a part's header block, the closing delimiter, a refused rest) went by copy.
            counted = true;
            CountSent(fileBytes - copiedBytes, count - fileBytes + copiedBytes);

            return FileSendStatus.Completed;
        }
        // NotSupportedException: the runtime refuses socket operations once a reset has marked the socket disconnected.
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or ObjectDisposedException or SocketException or NotSupportedException or InvalidOperationException)
        {
            Fail(ex);
            return FileSendStatus.ClientDisconnected;
        }
        finally
        {
            if (!counted)
            {
                // A body cut short (reset, truncation, rewrite, rate): the file bytes handed to the socket before it,
                // as Kestrel's own byte counts include what was written before an abort.
                CountSent(fileBytes - (end - position) - copiedBytes, copiedBytes);
            }

            reopened?.Dispose();
            if (fileAdded)
            {
                file.DangerousRelease();
            }
        }
    }

    private void CountSent(long bySendFile, long byCopy)
    {
        if (bySendFile > 0)
        {
            _metrics.SendPathSent(bySendFile, sendfile: true);
        }

        if (byCopy > 0)
        {
            _metrics.SendPathSent(byCopy, sendfile: false);
        }
    }

    /// <summary>Queues a copy of bytes the writer sends itself (a part's header block): the caller is the one sender.</summary>
    private void QueueCopy(ReadOnlySpan<byte> bytes)
    {
        byte[] block = bytes.Length <= BlockPool.BlockSize ? BlockPool.Rent() : BlockPool.RentLarge(bytes.Length);
        bytes.CopyTo(block);
        QueueBlock(block, bytes.Length);
    }

    /// <summary>Queues a pool block holding <paramref name="length"/> bytes to send; the queue returns it once sent.</summary>
    private void QueueBlock(byte[] block, int length)
    {
        lock (_sync)
        {
            _queued.Add((block, length));
            _queuedBytes += length;
        }
    }

    private FileSendStatus Truncated()
    {
        // The headers promised more than the file now has: the connection must end so the body cannot look complete.
        Fail(new IOException("The file was truncated while it was being sent."));
        return FileSendStatus.Truncated;
    }

    private FileSendStatus Changed()
    {
        // The headers describe a version the file no longer holds: the body may mix two, so it must not look complete.
        Fail(new IOException("The file was rewritten in place while it was being sent."));
        return FileSendStatus.Changed;
    }

    private enum SendFileOutcome
    {
        Sent,
        WouldBlock,
        EndOfFile,
        Failed,
        Refused,
    }

    // sendfile(2) refused as a call: a seccomp profile (EPERM, ENOSYS). Every later body on every connection is copied.
    private static bool s_sendFileRefused;
    private static int s_refusalLogged;

    /// <summary>sendfile(2) on this thread until the range is sent, the socket is full, the file ends or a send fails.</summary>
    private unsafe SendFileOutcome SendFileInline(SafeFileHandle file, ref long position, long end)
    {
        int fileFd = (int)file.DangerousGetHandle();
        while (position < end)
        {
            long at = position;
            nint sent;
            int errno = 0;
            bool added = false;
            try
            {
                _socketHandle.DangerousAddRef(ref added);
                sent = Native.SendFile((int)_socketHandle.DangerousGetHandle(), fileFd, &at, (nuint)Math.Min(end - position, MaxSendFileChunk));
                if (sent < 0)
                {
                    errno = Marshal.GetLastPInvokeError();
                }
            }
            catch (ObjectDisposedException ex)
            {
                Fail(ex);
                return SendFileOutcome.Failed;
            }
            finally
            {
                if (added)
                {
                    _socketHandle.DangerousRelease();
                }
            }

            if (sent > 0)
            {
                position += sent;
                continue;
            }

            if (sent == 0)
            {
                return SendFileOutcome.EndOfFile;
            }

            if (errno == Native.EINTR)
            {
                continue;
            }

            if (errno == Native.EAGAIN)
            {
                return SendFileOutcome.WouldBlock;
            }

            // Refused for this file (EINVAL, EOPNOTSUPP: a file system without the page-cache path sendfile needs) or for
            // the process (EPERM, ENOSYS: a seccomp profile). The socket is fine: the body goes on by copy.
            if (errno is Native.EINVAL or Native.EOPNOTSUPP or Native.EPERM or Native.ENOSYS)
            {
                if (errno is Native.EPERM or Native.ENOSYS)
                {
                    s_sendFileRefused = true;
                    if (Interlocked.Exchange(ref s_refusalLogged, 1) == 0)
                    {
                        Log.SendFileRefused(_logger, errno);
                    }
                }

                return SendFileOutcome.Refused;
            }

            Fail(Native.SendError(errno));
            return SendFileOutcome.Failed;
        }

        return SendFileOutcome.Sent;
    }

    /// <summary>
    /// The socket is full: the runtime waits for room on its epoll loop and sends the chunk with sendfile(2) there
    /// (<see cref="Socket.SendPacketsAsync"/>), under the response's minimum data rate (<see cref="ArmRateDeadline"/>).
    /// <paramref name="sent"/>: the body's file bytes already in the kernel.
    /// </summary>
    private async ValueTask<long> SendFileSlowAsync(FileStream file, long position, int chunk, MinDataRate? rate, long sent, long started)
    {
        if (!ArmRateDeadline(rate, sent, chunk, started, out bool timeout))
        {
            return 0;
        }

        try
        {
            SendFileArgs args = _holeWait ??= new SendFileArgs();
            return await args.SendAsync(_socket, file, position, chunk);
        }
        finally
        {
            DisarmRateDeadline(timeout);
        }
    }

    /// <summary>
    /// Bytes the hole sends itself (the held headers, a part's header block, the closing delimiter): at once when the
    /// socket has room (completed, nothing waited), else once it has, under the same deadline as the file's bytes.
    /// </summary>
    private ValueTask SendHeldAsync(bool more, MinDataRate? rate, long sent, long started)
    {
        lock (_sync)
        {
            if (SendQueuedInline(more))
            {
                return default;
            }
        }

        return SendQueuedBoundedAsync(rate, sent, started);
    }

    /// <summary>
    /// Bytes the hole sends itself once the socket has room, under the same deadline as the file's bytes: a client that
    /// stops reading between two parts is cut off as one that stops inside a part.
    /// </summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask SendQueuedBoundedAsync(MinDataRate? rate, long sent, long started)
    {
        if (ArmRateDeadline(rate, sent, _queuedBytes, started, out bool timeout))
        {
            try
            {
                await SendQueuedAsync();
            }
            finally
            {
                DisarmRateDeadline(timeout);
            }
        }

        if (_rateTooLow)
        {
            Fail(new SocketException((int)SocketError.TimedOut));
        }
    }

    /// <summary>
    /// Arms the timer that aborts the connection when a wait for socket room outlasts the minimum rate, as Kestrel times
    /// its own writes: the body's bytes already sent count as credit from its start, and a wait gets at least one period
    /// (the grace period, or the time a window of 64 KiB takes at the rate if longer: Kestrel's MaxResponseBufferSize,
    /// the most its own output holds back). From then on, looked at once a period, the client must have acknowledged
    /// since the wait began what the rate allows in that time less one grace period of slack (the kernel's
    /// tcpi_bytes_acked), or be cut off. So a client that stops reading is cut off about as soon as on Kestrel's path,
    /// while a wait can still ask for a whole file (one wait per socket refill: asking for 64 KiB at a time cost 1.6-1.7x
    /// the CPU per GiB at 100 MiB, benchmarks/results/rate-2026-11-26). Without tcpi_bytes_acked the wait gets the time its
    /// bytes take at the rate, once. False when the connection is already being aborted.
    /// </summary>
    private bool ArmRateDeadline(MinDataRate? rate, long sent, long waiting, long started, out bool armed)
    {
        armed = false;
        if (rate is null)
        {
            return true;
        }

        long acked = BytesAcked();
        if (acked < 0 && !_socketHandle.IsClosed)
        {
            _acksUnknown = true;
        }

        double period = Period(rate);
        double owed = acked >= 0 ? RateWindow : waiting;
        double credit = ((sent + owed) / rate.BytesPerSecond) - Stopwatch.GetElapsedTime(started).TotalSeconds;
        double first = Math.Min(Math.Max(credit, Math.Max(period, owed / rate.BytesPerSecond)), MaxTimerWait.TotalSeconds);
        if (!(first > 0))
        {
            RateTooLow();
            return false;
        }

        lock (_rateSync)
        {
            if (_released)
            {
                return true;
            }

            _rateTimer ??= NewRateTimer();
            _rateArmed = true;
            _rateAcked = acked;
            _rateArmedAt = Stopwatch.GetTimestamp();
            _rate = rate;
            Schedule(TimeSpan.FromSeconds(first));
        }

        armed = true;
        return true;
    }

    // How often a waiting client is looked at: the grace period, or the time RateWindow takes at the rate if longer.
    private static double Period(MinDataRate rate) => Math.Max(rate.GracePeriod.TotalSeconds, RateWindow / rate.BytesPerSecond);

    // The timer outlives the request that arms it first: it must not carry that request's context (scopes, Activity).
    private Timer NewRateTimer()
    {
        bool suppress = !ExecutionContext.IsFlowSuppressed();
        AsyncFlowControl flow = suppress ? ExecutionContext.SuppressFlow() : default;
        try
        {
            return new Timer(static s => ((SendPathWriter)s!).OnRateTimer(), this, Timeout.Infinite, Timeout.Infinite);
        }
        finally
        {
            if (suppress)
            {
                flow.Undo();
            }
        }
    }

    private void Schedule(TimeSpan due)
    {
        _rateDue = Stopwatch.GetTimestamp() + (long)(due.TotalSeconds * Stopwatch.Frequency);
        _rateTimer!.Change(due, Timeout.InfiniteTimeSpan);
    }

    // A period is over: a client that has kept up with the rate since the wait began (less one grace period) keeps its
    // connection for one more.
    private void OnRateTimer()
    {
        lock (_rateSync)
        {
            if (!_rateArmed)
            {
                return;
            }

            long now = Stopwatch.GetTimestamp();
            if (now < _rateDue)
            {
                // Early, or a fire of an earlier schedule that Change could not stop: look again when due.
                _rateTimer!.Change(TimeSpan.FromSeconds((double)(_rateDue - now) / Stopwatch.Frequency), Timeout.InfiniteTimeSpan);
                return;
            }

            // The connection already failed (a client reset closes the socket before the wait is disarmed): the client
            // left, it did not read too slowly, so nothing is aborted, logged or counted.
            if (_failed || _socketHandle.IsClosed)
            {
                _rateArmed = false;
                return;
            }

            long acked = BytesAcked();
            double waited = (double)(now - _rateArmedAt) / Stopwatch.Frequency;
            if (acked >= 0 && _rateAcked >= 0 && acked - _rateAcked >= _rate!.BytesPerSecond * (waited - _rate.GracePeriod.TotalSeconds))
            {
                Schedule(TimeSpan.FromSeconds(Math.Min(Period(_rate), MaxTimerWait.TotalSeconds)));
                return;
            }

            // Under the lock: a wait that ends now cannot disarm in between and leave the abort to a later response.
            _rateArmed = false;
            RateTooLow();
        }
    }

    // -1 once the socket is closed (its descriptor number may belong to another connection by then).
    private long BytesAcked()
    {
        bool added = false;
        try
        {
            _socketHandle.DangerousAddRef(ref added);
            return Native.BytesAcked((int)_socketHandle.DangerousGetHandle());
        }
        catch (ObjectDisposedException)
        {
            return -1;
        }
        finally
        {
            if (added)
            {
                _socketHandle.DangerousRelease();
            }
        }
    }

    private void DisarmRateDeadline(bool armed)
    {
        if (!armed)
        {
            return;
        }

        lock (_rateSync)
        {
            _rateArmed = false;
            _rateTimer?.Change(Timeout.Infinite, Timeout.Infinite);
        }
    }

    private void RateTooLow()
    {
        _rateTooLow = true;
        Log.SendPathDataRateTooLow(_logger, _connection.ConnectionId);
        _metrics.SendPathFallback("data_rate_abort");
        _connection.Abort(new ConnectionAbortedException("The response data rate was below the minimum."));
    }

    /// <summary>
    /// The same open file as an asynchronous <see cref="FileStream"/>, which <see cref="SendPacketsElement"/> requires (the
    /// cached descriptor is not one): reopened through /proc/self/fd, so it is the same inode even if the path was
    /// replaced or removed since. That needs a descriptor of its own (EMFILE when the process has none left) and the
    /// file's permissions as they are now (EACCES after a chmod); null, with the fallback reason, when it cannot be had.
    /// </summary>
    private static FileStream? TryReopen(SafeFileHandle file, out string? reason)
    {
        try
        {
            SafeFileHandle again = File.OpenHandle(
                $"/proc/self/fd/{file.DangerousGetHandle()}", FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete, FileOptions.Asynchronous);
            reason = null;
            return new FileStream(again, FileAccess.Read, bufferSize: 0, isAsync: true);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            reason = "reopen_failed";
            return null;
        }
    }

    /// <summary>
    /// Reads up to one block of the file at <paramref name="position"/> (before <paramref name="stop"/>) and sends it as
    /// the writer's own bytes, waiting for socket room under the body's rate deadline: one block in flight at a time.
    /// Returns the bytes sent, or -1 when the file ended first (truncated). MSG_MORE unless the block ends the range at
    /// <paramref name="end"/>.
    /// </summary>
    private async ValueTask<int> CopyChunkAsync(SafeFileHandle file, long position, long stop, long end, MinDataRate? rate, long sent, long started)
    {
        byte[] block = BlockPool.Rent();
        int length = (int)Math.Min(stop - position, block.Length);
        int read;
        try
        {
            // pread(2) from the page cache, as the copy path reads bodies below its synchronous threshold.
            read = RandomAccess.Read(file, block.AsSpan(0, length), position);
        }
        catch
        {
            BlockPool.Return(block);
            throw;
        }

        if (read < length)
        {
            BlockPool.Return(block);
            return -1;
        }

        QueueBlock(block, read);
        await SendHeldAsync(more: position + read < end, rate, sent, started);
        return read;
    }
}
