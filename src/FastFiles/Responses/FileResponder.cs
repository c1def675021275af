using System.Globalization;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using FastFiles.IO;
using System.Buffers;
using System.IO.Pipelines;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Primitives;
using Microsoft.AspNetCore.Builder;

namespace FastFiles.Responses;

/// <summary>
/// Answers a GET or HEAD for one file version: conditional requests (RFC 9110 13), ranges (RFC 9110 14), the
/// response headers, and the body through <see cref="FileBody"/>. Shared by the middleware and the results.
/// </summary>
internal sealed class FileResponder(FastFilesOptions options, ILogger logger, bool reuseStrings = true)
{
    private const string AcceptRangesBytes = "bytes";

    // HTTP/2 and HTTP/3 cached bodies larger than this go out in write+flush chunks of this size, so the frame writer
    // starts on the first DATA frames while the rest is copied (measured 1.18x on one stream of 64 KiB:
    // benchmarks/results/h2-chunked-2026-11-21). 16 KiB is HTTP/2's default maximum frame size.
    private const int ChunkedWriteSize = 16 * 1024;
    private const string VaryAcceptEncoding = "Accept-Encoding";

    /// <summary>
    /// Sends the response. Returns <see langword="false"/> without touching the response when a body had to be read
    /// from disk and the file on disk is no longer <paramref name="file"/> (a cached version gone stale); the caller
    /// then refreshes its entry and tries again.
    /// </summary>
    public async Task<bool> SendAsync(HttpContext context, FileVersion file, FileResponseSettings settings)
    {
        HttpRequest request = context.Request;
        HttpResponse response = context.Response;
        bool isGet = HttpMethods.IsGet(request.Method);
        bool isHead = !isGet && HttpMethods.IsHead(request.Method);

        // A content-hash ETag still being computed: entity-tag conditions wait for it, so they are only ever compared
        // with the real tag; unconditional responses go out without an ETag meanwhile.
        if (file.ContentHash is { ETag: null } pending && HasEntityTagCondition(request.Headers))
        {
            await pending.WhenReady();
        }

        // The per-connection memo of parsed request headers, unless string reuse is off.
        RequestHeaderCache? parsed = reuseStrings ? context.Features.Get<RequestHeaderCache>() : null;
        FileRequestHeaders requestHeaders = FileRequestHeaders.From(request.Headers);
        int status = FileRequestEvaluator.Evaluate(
            requestHeaders, file, isGet, isHead, settings.EnableRangeProcessing, parsed, out long start, out long count, out ByteRange[]? ranges, options.MaxRanges);
        MultipartByteRanges? multipart = ranges is null ? null : MultipartByteRanges.Create(ranges, file.Length, settings.ContentType);
        if (multipart is not null)
        {
            count = multipart.ContentLength;
        }

        // A body from disk for a version without an open handle (a cached entry): lease the descriptor the cache keeps
        // open, or open the file now, before any header is set, and make sure it is still the version the headers
        // will describe (an in-place write keeps the descriptor but changes the stamp).
        Microsoft.Win32.SafeHandles.SafeFileHandle? opened = null;
        SharedFileHandle? leased = null;
        if (!isHead && count > 0 && status is StatusCodes.Status200OK or StatusCodes.Status206PartialContent
            && file.Content is null && file.Handle is null && file.PhysicalPath is not null)
        {
            if (file.SharedHandle?.TryAcquire() is { } shared)
            {
                opened = shared;
                leased = file.SharedHandle;
            }
            else
            {
                try
                {
                    opened = FileVersion.OpenHandle(file.PhysicalPath);
                }
                catch (Exception ex) when (ex is IOException or UnauthorizedAccessException && !DescriptorExhaustion.Is(ex))
                {
                    return false;
                }
            }

            if (FileStamp.FromHandle(opened) != file.Stamp)
            {
                new HandleLease(opened, leased).Dispose();
                return false;
            }
        }

        using HandleLease lease = new(opened, leased);
        Microsoft.Win32.SafeHandles.SafeFileHandle? owned = opened;
        response.StatusCode = status;
        IHeaderDictionary headers = response.Headers;
        switch (status)
        {
            case StatusCodes.Status412PreconditionFailed:
                Log.PreconditionFailed(logger, settings.LogName);
                Prepare(context, file, settings);
                return true;
            case StatusCodes.Status416RangeNotSatisfiable:
                // RFC 9110 15.5.17: say how long the representation is.
                headers.ContentRange = string.Create(CultureInfo.InvariantCulture, $"bytes */{file.Length}");
                Log.RangeNotSatisfiable(logger, settings.LogName);
                Prepare(context, file, settings);
                return true;
            case StatusCodes.Status304NotModified:
                // RFC 9110 15.4.5: the validators and caching fields a 200 would have carried.
                ApplyValidators(headers, file, settings);
                Log.NotModified(logger, settings.LogName);
                Prepare(context, file, settings);
                return true;
        }

        ApplyValidators(headers, file, settings);
        if (multipart is not null)
        {
            // RFC 9110 14.6: the media type moves into each part.
            headers.ContentType = multipart.ContentType;
        }
        else if (settings.ContentType is not null)
        {
            headers.ContentType = settings.ContentType;
        }

        if (settings.EnableRangeProcessing)
        {
            headers.AcceptRanges = AcceptRangesBytes;
        }

        if (file.ContentEncoding is not null)
        {
            headers.ContentEncoding = file.ContentEncoding;
        }

        if (settings.ContentDisposition is not null)
        {
            headers.ContentDisposition = settings.ContentDisposition;
        }

        if (multipart is null && status == StatusCodes.Status206PartialContent)
        {
            headers.ContentRange = string.Create(CultureInfo.InvariantCulture, $"bytes {start}-{start + count - 1}/{file.Length}");
        }

        response.ContentLength = count;
        Prepare(context, file, settings);

        if (isHead || count == 0)
        {
            Log.Served(logger, settings.LogName, status, 0);
            return true;
        }

        FileSendStatus result;
        CancellationToken aborted = context.RequestAborted;
        try
        {
            if (file.Content is null)
            {
                // File bodies reach Kestrel through Advance + flush, which its HTTP/1.1 rate check does not count: size
                // the check's grace for one copy batch. (A cached body is written once and flushed by Kestrel after the
                // response ends, outside the check.)
                ResponseDataRate.AllowUncountedFlushes(context.Features.Get<IHttpMinResponseDataRateFeature>(), Math.Min(count, FileBodyWriter.FlushThreshold));
            }

            // Start first: the headers and the first body bytes then leave in one write.
            await response.StartAsync(aborted);
            if (multipart is not null)
            {
                result = await WriteMultipartAsync(response, file, owned ?? file.Handle, multipart, aborted);
            }
            else if (file.Content is not null)
            {
                // Cached bytes: one copy into the pipe, no file-system call. On HTTP/1.1 no flush of our own:
                // Kestrel flushes when the request completes, so headers and body leave in one write, and skipping
                // the explicit flush saves the 72 bytes Kestrel allocates per started-then-flushed response
                // (measured in the allocation tests).
                if (count > ChunkedWriteSize && (HttpProtocol.IsHttp2(request.Protocol) || HttpProtocol.IsHttp3(request.Protocol)))
                {
                    ReadOnlyMemory<byte> rest = file.Content.AsMemory((int)start, (int)count);
                    result = FileSendStatus.Completed;
                    while (!rest.IsEmpty)
                    {
                        int n = Math.Min(rest.Length, ChunkedWriteSize);
                        FlushResult flushed = await response.BodyWriter.WriteAsync(rest[..n], aborted);
                        rest = rest[n..];
                        if (flushed.IsCanceled || (flushed.IsCompleted && !rest.IsEmpty))
                        {
                            result = FileSendStatus.ClientDisconnected;
                            break;
                        }
                    }
                }
                else
                {
                    response.BodyWriter.Write(file.Content.AsSpan((int)start, (int)count));
                    result = FileSendStatus.Completed;
                }
            }
            else if ((owned ?? file.Handle) is { } handle)
            {
                // The response ends when we return, so Kestrel's own final flush sends the tail.
                result = await FileBody.WriteAsync(context.Features, handle, start, count, ReadSizePolicy.For(options, request.Protocol), options.SynchronousReadThreshold, aborted, flushAtEnd: false);
            }
            else
            {
                result = await StreamBodyWriter.WriteAsync(response.BodyWriter, file.FileInfo!, start, count, ReadSizePolicy.For(options, request.Protocol), aborted);
            }
        }
        catch (OperationCanceledException) when (aborted.IsCancellationRequested)
        {
            result = FileSendStatus.ClientDisconnected;
        }

        switch (result)
        {
            case FileSendStatus.Completed:
                Log.Served(logger, settings.LogName, status, count);
                break;
            case FileSendStatus.Truncated:
                Log.FileTruncated(logger, settings.LogName, count);
                context.Abort();
                break;
            default:
                // Like UseStaticFiles: swallow it, but abort so a cut-short body cannot look complete.
                Log.ClientDisconnected(logger, settings.LogName);
                context.Abort();
                break;
        }

        return true;
    }

    // Each part's header block, then its bytes, then the closing delimiter. Parts are copied, never sent as zero-copy
    // holes: a hole is one whole body.
    private async ValueTask<FileSendStatus> WriteMultipartAsync(
        HttpResponse response, FileVersion file, Microsoft.Win32.SafeHandles.SafeFileHandle? handle, MultipartByteRanges multipart, CancellationToken aborted)
    {
        PipeWriter writer = response.BodyWriter;
        int bufferSize = ReadSizePolicy.For(options, response.HttpContext.Request.Protocol);
        foreach (MultipartByteRanges.Part part in multipart.Parts)
        {
            writer.Write(part.Header);
            (long start, long count) = (part.Range.Start, part.Range.Count);
            FileSendStatus status = file.Content is not null ? Copy(writer, file.Content, start, count)
                : handle is not null ? await FileBodyWriter.WriteAsync(writer, handle, start, count, bufferSize, options.SynchronousReadThreshold, aborted, flushAtEnd: false)
                : await StreamBodyWriter.WriteAsync(writer, file.FileInfo!, start, count, bufferSize, aborted);
            if (status != FileSendStatus.Completed)
            {
                return status;
            }
        }

        // An explicit flush: Kestrel's HTTP/1.1 producer flushes at the end only what it counted as unflushed, and bytes
        // advanced after an earlier flush (the later parts and the closing delimiter) are not counted.
        writer.Write(multipart.Closing);
        FlushResult flushed = await writer.FlushAsync(aborted);
        return flushed.IsCanceled ? FileSendStatus.ClientDisconnected : FileSendStatus.Completed;

        static FileSendStatus Copy(PipeWriter writer, byte[] content, long start, long count)
        {
            writer.Write(content.AsSpan((int)start, (int)count));
            return FileSendStatus.Completed;
        }
    }

    private void ApplyValidators(IHeaderDictionary headers, FileVersion file, FileResponseSettings settings)
    {
        // With string reuse on, these are the version's own strings, shared by every response to it.
        if ((reuseStrings ? file.ETag : file.FreshETag()) is { } etag)
        {
            headers.ETag = etag;
        }

        headers.LastModified = reuseStrings ? file.LastModifiedHeader : file.FreshLastModifiedHeader();
        if (settings.CacheControl is not null)
        {
            headers.CacheControl = settings.CacheControl;
        }

        if (settings.VaryAcceptEncoding)
        {
            headers.Vary = VaryAcceptEncoding;
        }
    }

    private static bool HasEntityTagCondition(IHeaderDictionary headers)
        => !StringValues.IsNullOrEmpty(headers.IfMatch) || !StringValues.IsNullOrEmpty(headers.IfNoneMatch) || !StringValues.IsNullOrEmpty(headers.IfRange);

    private static void Prepare(HttpContext context, FileVersion file, FileResponseSettings settings)
        => settings.OnPrepareResponse?.Invoke(new FastFileResponseContext(context, file.PhysicalPath, file.FileInfo, file.ContentEncoding));

    // Ends this response's use of a descriptor: a lease on the cache's shared one is released, one opened for this
    // response is closed. A struct, so the hot path allocates nothing for it.
    private readonly struct HandleLease(Microsoft.Win32.SafeHandles.SafeFileHandle? handle, SharedFileHandle? shared) : IDisposable
    {
        public void Dispose()
        {
            if (shared is not null)
            {
                shared.Release();
            }
            else
            {
                handle?.Dispose();
            }
        }
    }
}
