using System.Buffers;
using System.Globalization;
using System.IO.Pipelines;
using System.Runtime.CompilerServices;
using FastFiles.Caching;
using FastFiles.Connections.SendPath;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using FastFiles.IO;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using System.Net.Security;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Logging;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Connections;

/// <summary>
/// The HTTP/1.1 static lane: reads the connection's bytes itself and answers GET and HEAD for files under its roots
/// from prebuilt response bytes, before Kestrel parses anything. The first request it does not fully handle, and
/// everything after it, goes to Kestrel with its bytes untouched: the lane advances the transport's reader only past
/// requests it answered, then calls the rest of the pipeline with the same transport, and never takes the connection
/// back. HTTP/2 connections (ALPN h2) pass straight through.
/// </summary>
/// <remarks>
/// Kestrel's contracts while the lane holds a connection: an idle connection is closed after
/// <see cref="KestrelServerLimits.KeepAliveTimeout"/>; a request that arrives in pieces is awaited within
/// <see cref="KestrelServerLimits.RequestHeadersTimeout"/> from its first bytes and answered 408 when that passes, as
/// Kestrel does (a large one arriving quickly is handed to Kestrel, whose header limits then apply; a dribbled one stays
/// until its header section is complete, so Kestrel's header timer never starts afresh); a client that does not read
/// its responses is aborted under <see cref="KestrelServerLimits.MinResponseDataRate"/>; on graceful shutdown the
/// response in flight is finished, a request already arriving is awaited and answered with Connection: close (by the
/// lane, or by Kestrel when the lane hands it off: <see cref="StaticLaneShutdownHandOff"/>), and the connection closed.
/// Kestrel's connection limit (<see cref="KestrelServerLimits.MaxConcurrentConnections"/>) is applied before any
/// connection middleware runs.
/// </remarks>
internal sealed class StaticLaneConnectionMiddleware
{
    // Flush within a pipelined batch once this much is buffered: Kestrel's default MaxResponseBufferSize, so one read
    // of many small requests for large files cannot buffer without bound.
    private const int FlushThreshold = 64 * 1024;

    // A request the lane waits for in pieces: at most this many reads and bytes (requests are a few hundred bytes; a
    // slower or larger one goes to Kestrel, whose parser is incremental).
    private const int MaxPartialReads = 4;
    private const int MaxPartialBytes = 8 * 1024;

    // A request still arriving this long after its first bytes is being dribbled (slowloris): the lane keeps it until
    // RequestHeadersTimeout from those bytes and then closes, because handing it to Kestrel would start Kestrel's own
    // header timer afresh (measured: 200 connections sending a byte a second were all still open after 34 s with a
    // 30 s timeout; eng/reliability.sh, slowloris).
    private const long DribbleMs = 1000;

    private const int StatusCodes200 = 200;
    private const int StatusCodes206 = 206;
    private const int StatusCodes304 = 304;
    private const int StatusCodes416 = 416;

    // Kestrel's heartbeat, which its TimeoutControl adds to every timeout.
    private const long KestrelHeartbeatMs = 1000;

    private static readonly string[] ReasonNames = Enum.GetNames<HandOffReason>().Select(n => n.ToLowerInvariant()).ToArray();

    private readonly ConnectionDelegate _next;
    private readonly StaticLaneRoot[] _roots;
    private readonly StaticLaneHeartbeat _heartbeat;
    private readonly LaneLimits _limits;
    private readonly long _keepAliveTimeoutMs;
    private readonly long _requestHeadersTimeoutMs;
    private readonly MinDataRate? _minResponseDataRate;
    private readonly bool _serverHeader;
    private readonly FastFilesMetrics _metrics;
    private readonly ILogger _logger;
    private readonly StaticLaneHostFilter? _hosts;

    public StaticLaneConnectionMiddleware(
        ConnectionDelegate next, StaticLaneRoot[] roots, StaticLaneHeartbeat heartbeat, KestrelServerLimits limits, bool serverHeader, FastFilesMetrics metrics, ILogger logger,
        StaticLaneHostFilter? hosts)
    {
        _hosts = hosts;
        _serverHeader = serverHeader;
        _next = next;
        _roots = roots;
        _heartbeat = heartbeat;
        _limits = LaneLimits.From(limits);
        // Kestrel adds one heartbeat (1 s) to every timeout it sets, so one set just before a tick is never cut short: its
        // connections close between the timeout and two seconds past it. The lane, checked on a heartbeat of its own,
        // adds the same, so a client sees one behaviour with the lane or without it. (An infinite timeout is
        // TimeSpan.MaxValue here, which Kestrel's limits store for Timeout.InfiniteTimeSpan: far from overflowing. Kestrel
        // 10.0's own timeout control closes such connections at once, as if expired; the lane keeps them, as the setting
        // says.)
        _keepAliveTimeoutMs = (long)limits.KeepAliveTimeout.TotalMilliseconds + KestrelHeartbeatMs;
        _requestHeadersTimeoutMs = (long)limits.RequestHeadersTimeout.TotalMilliseconds + KestrelHeartbeatMs;
        _minResponseDataRate = limits.MinResponseDataRate;
        _metrics = metrics;
        _logger = logger;
    }

    public Task OnConnectionAsync(ConnectionContext context)
    {
        // ALPN chose HTTP/2: nothing for the lane.
        if (context.Features.Get<ISslStreamFeature>()?.SslStream.NegotiatedApplicationProtocol == SslApplicationProtocol.Http2)
        {
            return _next(context);
        }

        return RunAsync(context);
    }

    private async Task RunAsync(ConnectionContext context)
    {
        PipeReader input = context.Transport.Input;
        PipeWriter output = context.Transport.Output;

        // Inside the zero-copy send path the lane writes to it directly: bodies the cache does not hold go by sendfile(2).
        SendPathWriter? sendPath = output as SendPathWriter;
        var connection = new LaneConnection(_heartbeat, context, input, context.Features.Get<IConnectionLifetimeNotificationFeature>());
        string? handOff = null;
        StaticLaneShutdownHandOff? deferral = null;

        // A request that has arrived in part: how many reads it has taken so far, and the deadline for the rest.
        int partialReads = 0;
        long headersDeadline = 0;

        // The length of that request's line once StaticLaneParser.AwaitsRest has found it plain (0 before).
        int acceptedLine = 0;

        // Whether the lane has answered a request on this connection, which Kestrel then never counts (see Http2Preface).
        bool answered = false;
        bool plaintext = context.Features.Get<ITlsHandshakeFeature>() is null;
        try
        {
            while (true)
            {
                long deadline = partialReads > 0 ? headersDeadline : Environment.TickCount64 + _keepAliveTimeoutMs;
                if (!connection.EnterWait(deadline, partial: partialReads > 0))
                {
                    await AnswerHeadersTimeoutAsync(output, connection, partialReads);
                    break;
                }

                ReadResult result = await input.ReadAsync();
                if (connection.LeaveWait(result.IsCanceled))
                {
                    // Keep-alive timeout or graceful shutdown while idle: close, as Kestrel does, without a response.
                    input.AdvanceTo(result.Buffer.Start);
                    await AnswerHeadersTimeoutAsync(output, connection, partialReads);
                    break;
                }

                ReadOnlySequence<byte> buffer = result.Buffer;
                SequencePosition consumed = buffer.Start;
                long unflushed = 0;
                int served = 0;
                bool close = false;
                HandOffReason reason = HandOffReason.Partial;
                bool unhandled = false;
                while (true)
                {
                    ReadOnlySequence<byte> rest = buffer.Slice(consumed);
                    if (rest.IsEmpty)
                    {
                        break;
                    }

                    if (!TryServe(rest, output, sendPath, connection.CloseRequested, out int length, out long written, out close, out reason, out LaneFileBody file))
                    {
                        // Nothing was written for it: its Connection: close is Kestrel's to honour.
                        close = false;
                        unhandled = true;
                        break;
                    }

                    consumed = rest.GetPosition(length);
                    unflushed += written;
                    served++;
                    answered = true;
                    if (file.Handle is not null)
                    {
                        // A body from disk: what is written so far, then the file, straight to the socket. Its request
                        // and body count once the body is in the socket, so a client that leaves mid-body is not counted
                        // as answered.
                        _metrics.LaneServed(served - 1, unflushed);
                        served = 0;
                        unflushed = 0;
                        FileSendStatus? sent;
                        try
                        {
                            sent = await sendPath!.SendAfterWrittenAsync(file.Handle, file.Stamp, file.Offset, file.Count, _minResponseDataRate);
                        }
                        finally
                        {
                            file.Release();
                        }

                        if (sent != FileSendStatus.Completed)
                        {
                            // The send path aborted the connection (client gone, too slow, file truncated).
                            input.AdvanceTo(consumed);
                            return;
                        }

                        _metrics.LaneServed(1, file.Count);
                    }

                    if (close || connection.CloseRequested)
                    {
                        break;
                    }

                    if (unflushed >= FlushThreshold)
                    {
                        _metrics.LaneServed(served, unflushed);
                        served = 0;
                        long pending = unflushed;
                        unflushed = 0;
                        if (!await FlushAsync(output, connection, pending))
                        {
                            input.AdvanceTo(consumed);
                            return;
                        }
                    }
                }

                bool prefacePending = false;
                if (unhandled && reason == HandOffReason.Method && answered && plaintext && !connection.CloseRequested)
                {
                    switch (Http2Preface(buffer.Slice(consumed)))
                    {
                        case PrefaceMatch.Partial:
                            // It may still be one: wait for its whole line (at most 15 bytes, under the header deadline)
                            // however many reads it takes, since only the lane can answer it as Kestrel alone would.
                            reason = HandOffReason.Partial;
                            prefacePending = true;
                            break;
                        case PrefaceMatch.Whole:
                            // Kestrel's answer to an unknown version (RequestRejectionReason.UnrecognizedHTTPVersion).
                            unflushed += WriteClosingAnswer(output, "HTTP/1.1 505 HTTP Version Not Supported\r\n"u8);
                            Log.LaneAnsweredHttp2Preface(_logger, context.ConnectionId);
                            unhandled = false;
                            close = true;
                            break;
                    }
                }

                if (served > 0 || unflushed > 0)
                {
                    _metrics.LaneServed(served, unflushed);
                    if (!await FlushAsync(output, connection, unflushed))
                    {
                        input.AdvanceTo(consumed);
                        return;
                    }
                }

                // A request whose first bytes came in an earlier read, still arriving DribbleMs later: it stays in the lane
                // until its header section is complete (or plainly one Kestrel rejects), under the deadline its first
                // bytes started, since a hand-off would start Kestrel's header timer afresh.
                bool dribbled = served == 0 && partialReads > 0 && Environment.TickCount64 - (headersDeadline - _requestHeadersTimeoutMs) >= DribbleMs;
                if (unhandled && !result.IsCompleted && (reason == HandOffReason.Partial
                    ? (served > 0 || partialReads < MaxPartialReads || dribbled || prefacePending) && (dribbled || buffer.Slice(consumed).Length <= MaxPartialBytes)
                    : dribbled && !connection.CloseRequested && AwaitsRest(buffer.Slice(consumed), ref acceptedLine)))
                {
                    // The read ended inside a request (pipelined batches split anywhere): wait for the rest, within
                    // Kestrel's RequestHeadersTimeout from its first bytes, for a few reads and a few KiB unless it is
                    // being dribbled; a larger one that arrives quickly is Kestrel's to handle. A request under way
                    // when graceful shutdown begins is awaited too, and answered with Connection: close, as Kestrel does.
                    if (served > 0 || partialReads == 0)
                    {
                        partialReads = 0;
                        acceptedLine = 0;
                        headersDeadline = Environment.TickCount64 + _requestHeadersTimeoutMs;
                    }

                    partialReads++;
                    input.AdvanceTo(consumed, buffer.End);
                    continue;
                }

                partialReads = 0;

                if (unhandled && !close)
                {
                    // Kestrel's first read sees exactly the bytes from the unhandled request on (consumed and examined).
                    input.AdvanceTo(consumed);
                    if (connection.HandOff(out bool closeRequested))
                    {
                        // A timer's cancellation raced with the read: take it here so Kestrel's first read does not see it.
                        ReadResult stray = await input.ReadAsync();
                        input.AdvanceTo(stray.Buffer.Start);
                    }

                    // After shutdown was requested the request has begun to arrive: Kestrel answers it with Connection:
                    // close, as it answers one it has begun to read itself, once it is shown the shutdown only then.
                    if (closeRequested)
                    {
                        deferral = StaticLaneShutdownHandOff.Install(context, connection.Lifetime);
                    }

                    handOff = ReasonNames[(int)reason];
                    break;
                }

                input.AdvanceTo(consumed, buffer.End);
                if (close || result.IsCompleted)
                {
                    break;
                }
            }

            if (handOff is null)
            {
                // The lane closes the connection itself (Connection: close, keep-alive timeout, shutdown, client gone).
                await output.CompleteAsync();
                await input.CompleteAsync();
                return;
            }
        }
        catch (Exception ex) when (ex is ConnectionResetException or ConnectionAbortedException or IOException or ObjectDisposedException)
        {
            // The client went away (or the connection was aborted) mid-read or mid-write; nothing the lane holds
            // outlives this method.
            Log.LaneConnectionEnded(_logger, context.ConnectionId, ex);
            return;
        }
        finally
        {
            connection.Dispose();
        }

        _metrics.LaneHandedOff(handOff);
        Log.LaneHandedOff(_logger, context.ConnectionId, handOff);
        if (deferral is null)
        {
            await _next(context);
            return;
        }

        try
        {
            await _next(context);
        }
        finally
        {
            deferral.Uninstall(context);
        }
    }

    // Writes the whole response for the request at the start of rest, or nothing (returns false: hand off).
    private bool TryServe(
        ReadOnlySequence<byte> rest, PipeWriter output, SendPathWriter? sendPath, bool closing, out int length, out long written, out bool close,
        out HandOffReason reason, out LaneFileBody file)
    {
        ReadOnlySpan<byte> first = rest.FirstSpan;
        if (StaticLaneParser.TryParse(first, _limits, out LaneRequest request, out length, out reason))
        {
            return Respond(request, output, sendPath, closing, out written, out close, ref reason, out file);
        }

        written = 0;
        close = false;
        file = default;
        if (reason != HandOffReason.Partial || rest.IsSingleSegment)
        {
            return false;
        }

        // The request spans pipe segments: parse a contiguous copy; one unfinished within it is over a limit, which the
        // parser reports.
        byte[] copy = RentContiguous(rest, out int size);
        try
        {
            return StaticLaneParser.TryParse(copy.AsSpan(0, size), _limits, out request, out length, out reason)
                && Respond(request, output, sendPath, closing, out written, out close, ref reason, out file);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(copy);
        }
    }

    // closing: graceful shutdown began; like Kestrel, say Connection: close on the response in flight.
    private bool Respond(
        in LaneRequest request, PipeWriter output, SendPathWriter? sendPath, bool closing, out long written, out bool close, ref HandOffReason reason,
        out LaneFileBody file)
    {
        written = 0;
        file = default;
        close = request.Close || closing;
        if (_hosts is not null && !_hosts.Allows(request.Host))
        {
            // Not among the app's AllowedHosts: its host filtering answers.
            reason = HandOffReason.Host;
            return false;
        }

        StaticLaneRoot? root = null;
        CachedFile? entry = null;
        StaticLaneResponse[]? responses = null;
        bool built = false;
        try
        {
            foreach (StaticLaneRoot candidate in _roots)
            {
                if (candidate.TryResolve(request.Path, out entry, out responses, out built))
                {
                    root = candidate;
                    break;
                }
            }
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            // Building an entry failed: out of descriptors (the app's middleware answers 503 with Retry-After and logs it
            // once), or a read error (EIO, ESTALE: a failing disk, NFS), which the app answers and logs as it would
            // without the lane. Never the client's fault, so never the connection's end.
            reason = HandOffReason.Uncached;
            return false;
        }

        if (root is null)
        {
            reason = request.Path[^1] == (byte)'/' ? HandOffReason.Directory : HandOffReason.NotFound;
            return false;
        }

        // Accept-Encoding is consulted only when the file has (or will have) variants, as UseFastFiles does (RFC 9110 12.5.3).
        StaticLaneResponse response = responses![0];
        if (entry!.Available != ContentCodings.None || entry.Pending != ContentCodings.None)
        {
            Span<char> chars = stackalloc char[request.AcceptEncoding.Length];
            System.Text.Ascii.ToUtf16(request.AcceptEncoding, chars, out _);
            ContentCodings coding = root.Cache.Negotiate(entry, AcceptEncoding.Parse(chars), wholeBody: !request.IsHead && request.Range.IsEmpty);
            if (coding != ContentCodings.None)
            {
                response = responses[1 + Sidecar.IndexOf(coding)];
            }
        }

        FileVersion version = response.Version;
        if (response.ETag is not { } etag)
        {
            // No validator yet (a content hash being computed): UseFastFiles answers without an ETag, or waits for it
            // when the request has a condition.
            reason = HandOffReason.Uncached;
            return false;
        }

        int status = StatusCodes200;
        long start = 0, count = version.Length;

        // RFC 9110 13.2.2: If-None-Match (weak comparison; a malformed value is a true condition), else
        // If-Modified-Since (13.1.3: ignored whenever If-None-Match is present). If-Match and If-Unmodified-Since never
        // reach here (the parser hands them off).
        if (!request.IfNoneMatch.IsEmpty)
        {
            Span<char> chars = stackalloc char[request.IfNoneMatch.Length];
            System.Text.Ascii.ToUtf16(request.IfNoneMatch, chars, out _);
            if (EntityTagMatcher.AnyMatches(chars, etag, strong: false) == true)
            {
                status = StatusCodes304;
            }
        }
        else if (!request.IfModifiedSince.IsEmpty)
        {
            Span<char> chars = stackalloc char[request.IfModifiedSince.Length];
            System.Text.Ascii.ToUtf16(request.IfModifiedSince, chars, out _);
            // Only the IMF-fixdate form (RFC 9110 5.6.7), which HeaderUtilities parses identically; the obsolete forms
            // go to the app.
            if (!DateTimeOffset.TryParseExact(chars, "r", CultureInfo.InvariantCulture, DateTimeStyles.AssumeUniversal, out DateTimeOffset since))
            {
                reason = HandOffReason.Header;
                return false;
            }

            // A date in the future is ignored, as UseFastFiles does.
            if (since <= DateTimeOffset.UtcNow && version.LastModified <= since)
            {
                status = StatusCodes304;
            }
        }

        // RFC 9110 14.2: one range, GET only, after the preconditions.
        if (status == StatusCodes200 && !request.IsHead && !request.Range.IsEmpty)
        {
            if (request.Range.Contains((byte)','))
            {
                // Several ranges are a multipart/byteranges response (FastFilesOptions.MaxRanges): the app's.
                reason = HandOffReason.Header;
                return false;
            }

            Span<char> chars = stackalloc char[request.Range.Length];
            System.Text.Ascii.ToUtf16(request.Range, chars, out _);
            switch (ByteRangeParser.Parse(chars, version.Length, out long rangeStart, out long rangeCount))
            {
                case RangeKind.Single:
                    status = StatusCodes206;
                    start = rangeStart;
                    count = rangeCount;
                    break;
                case RangeKind.Unsatisfiable:
                    status = StatusCodes416;
                    break;
            }
        }

        bool needsBody = !request.IsHead && status is StatusCodes200 or StatusCodes206 && count > 0;

        // A cached body long enough goes by sendfile(2) too, from the descriptor the cache keeps for it
        // (ZeroCopySendFileOptions.CachedMinimumLength), unless the file is not at rest: then the bytes in memory.
        bool fromDisk = needsBody && (response.Body is null || (sendPath is not null && version.SharedHandle is not null && count >= sendPath.CachedMinimumLength));
        if (fromDisk && (sendPath is null || sendPath.Failed || sendPath.RecentlyWritten(version.Stamp) || !LaneFileBody.TryOpen(version, start, count, leaseOnly: response.Body is not null, out file)))
        {
            if (response.Body is null)
            {
                // Over the cache's size limit: the app's (Kestrel's copy path, also for a file written just now, which
                // the copy path checks before its last bytes leave).
                reason = HandOffReason.Uncached;
                return false;
            }

            fromDisk = false;
        }

        if (needsBody && !fromDisk && count > FlushThreshold)
        {
            // A body from memory longer than a flush batch (a MaxCachedFileSize raised past 64 KiB) would sit whole in the
            // connection's output while a slow client reads it: the app's path sends it in flushed batches.
            reason = HandOffReason.Uncached;
            return false;
        }

        ReadOnlySpan<byte> date = HttpDateClock.Line;
        try
        {
            written = status switch
            {
                StatusCodes304 => response.WriteNotModified(output, date, close),
                StatusCodes416 => response.WriteUnsatisfiable(output, date, close),
                StatusCodes206 => response.WritePartial(output, date, close, start, count, withBody: !fromDisk),
                _ => response.WriteOk(output, date, close, withBody: !request.IsHead && !fromDisk),
            };
        }
        catch
        {
            // The writer failed (the connection is going): the descriptor goes back now, as the caller never sees it.
            file.Release();
            file = default;
            throw;
        }

        root.Cache.CountLookup(built);
        if (needsBody && !fromDisk)
        {
            // A body from memory on a zero-copy send path connection is a copy (fastfiles.send_path.bytes), as it is
            // for UseFastFiles.
            sendPath?.Copied(count);
        }

        return true;
    }

    /// <summary>A body from disk: a leased (or opened) descriptor of the version the headers describe.</summary>
    private readonly struct LaneFileBody(VersionHandle descriptor, FileStamp stamp, long offset, long count)
    {
        public SafeFileHandle? Handle => descriptor.Handle;

        public FileStamp Stamp { get; } = stamp;

        public long Offset { get; } = offset;

        public long Count { get; } = count;

        // leaseOnly: the body is in memory too, so the cache's descriptor or nothing (never an open per request).
        public static bool TryOpen(FileVersion version, long offset, long count, bool leaseOnly, out LaneFileBody body)
        {
            body = default;
            try
            {
                if (!VersionHandle.TryAcquire(version, leaseOnly, out VersionHandle descriptor))
                {
                    return false;
                }

                body = new LaneFileBody(descriptor, version.Stamp, offset, count);
                return true;
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
            {
                // Gone, unreadable, or out of descriptors: the app's middleware answers (404, 503).
                return false;
            }
        }

        public void Release() => descriptor.Dispose();
    }

    // StaticLaneParser.AwaitsRest over a request that may span pipe segments.
    private bool AwaitsRest(ReadOnlySequence<byte> rest, ref int acceptedLine)
    {
        if (rest.IsSingleSegment)
        {
            return StaticLaneParser.AwaitsRest(rest.FirstSpan, _limits, ref acceptedLine);
        }

        byte[] copy = RentContiguous(rest, out int size);
        try
        {
            return StaticLaneParser.AwaitsRest(copy.AsSpan(0, size), _limits, ref acceptedLine);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(copy);
        }
    }

    // A pooled contiguous copy of the start of a request spanning segments: at most what Kestrel's request line and
    // header limits allow, so anything the parser needs to decide is in it. The caller returns the array.
    private byte[] RentContiguous(ReadOnlySequence<byte> rest, out int size)
    {
        size = (int)Math.Min(rest.Length, (long)_limits.MaxRequestLineSize + _limits.MaxRequestHeadersTotalSize + 4);
        byte[] copy = ArrayPool<byte>.Shared.Rent(size);
        rest.Slice(0, size).CopyTo(copy);
        return copy;
    }

    // The request line of the HTTP/2 connection preface (RFC 9113 3.4).
    private static ReadOnlySpan<byte> PrefaceLine => "PRI * HTTP/2.0\r\n"u8;

    private enum PrefaceMatch
    {
        None,
        Partial,
        Whole,
    }

    /// <summary>
    /// Whether the next request starts with the HTTP/2 preface's request line. Kestrel answers that line with an HTTP/2
    /// GOAWAY (HTTP_1_1_REQUIRED) only as the first request it parses on a plaintext connection, and with
    /// "505 HTTP Version Not Supported" after others (Http1Connection.DetectHttp2Preface). Handed off after requests the
    /// lane answered, it would be Kestrel's first, so the lane gives the 505 Kestrel alone gives.
    /// </summary>
    private static PrefaceMatch Http2Preface(ReadOnlySequence<byte> next)
    {
        Span<byte> start = stackalloc byte[16];
        int length = (int)Math.Min(next.Length, start.Length);
        next.Slice(0, length).CopyTo(start);
        return !PrefaceLine.StartsWith(start[..length]) ? PrefaceMatch.None
            : length < PrefaceLine.Length ? PrefaceMatch.Partial
            : PrefaceMatch.Whole;
    }

    // A bodiless answer that ends the connection, as Kestrel writes its own (408, 505): the status line, then
    // Content-Length: 0, Connection: close, Date and Server (following AddServerHeader). Returns the bytes written.
    private int WriteClosingAnswer(PipeWriter output, ReadOnlySpan<byte> statusLine)
    {
        ReadOnlySpan<byte> head = "Content-Length: 0\r\nConnection: close\r\n"u8;
        ReadOnlySpan<byte> date = HttpDateClock.Line;
        ReadOnlySpan<byte> server = _serverHeader ? "Server: Kestrel\r\n"u8 : default;
        output.Write(statusLine);
        output.Write(head);
        output.Write(date);
        output.Write(server);
        output.Write("\r\n"u8);
        return statusLine.Length + head.Length + date.Length + server.Length + 2;
    }

    // The rest of a request did not come within RequestHeadersTimeout from its first bytes: Kestrel's answer, a 408 that
    // closes the connection (RFC 9110 15.5.9), then the lane closes. Not on graceful shutdown, where Kestrel says nothing.
    private async ValueTask AnswerHeadersTimeoutAsync(PipeWriter output, LaneConnection connection, int partialReads)
    {
        if (partialReads == 0 || !connection.TimedOut || connection.CloseRequested)
        {
            return;
        }

        WriteClosingAnswer(output, "HTTP/1.1 408 Request Timeout\r\n"u8);
        await FlushAsync(output, connection, 0);
    }

    // Flushes; false when the client is gone, or too slow (the heartbeat then aborts the connection under Kestrel's
    // minimum response data rate, as Kestrel does for its own responses).
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<bool> FlushAsync(PipeWriter output, LaneConnection connection, long bytes)
    {
        ValueTask<FlushResult> flush = output.FlushAsync();
        FlushResult result;
        if (flush.IsCompletedSuccessfully)
        {
            result = flush.Result;
        }
        else
        {
            if (_minResponseDataRate is { } rate)
            {
                // As Kestrel times one write (TimeoutControl.BytesWrittenToBuffer): the longer of the grace period and
                // the time the bytes take at the minimum rate, not their sum, plus the heartbeat Kestrel adds to every
                // timeout (a client not reading was cut off a second earlier than without the lane).
                connection.StartWrite(Math.Max(rate.GracePeriod.TotalSeconds, bytes / rate.BytesPerSecond), KestrelHeartbeatMs);
            }

            try
            {
                result = await flush;
            }
            finally
            {
                connection.EndWrite();
            }
        }

        return !result.IsCompleted && !result.IsCanceled;
    }
}
