using System.Globalization;
using FastFiles.Connections;
using FastFiles.IO;
using System.Buffers;
using System.IO.Pipelines;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Primitives;
using Microsoft.Net.Http.Headers;

namespace FastFiles.StaticFiles;

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

        // The per-connection memo of parsed request headers, unless string reuse is off.
        RequestHeaderCache? parsed = reuseStrings ? context.Features.Get<RequestHeaderCache>() : null;
        int status = Evaluate(request.Headers, file, isGet, isHead, settings.EnableRangeProcessing, parsed, out long start, out long count);

        // A body from disk for a version without an open handle (a cached entry): open it now, before any header
        // is set, and make sure it is still the version the headers will describe.
        Microsoft.Win32.SafeHandles.SafeFileHandle? opened = null;
        if (!isHead && count > 0 && status is StatusCodes.Status200OK or StatusCodes.Status206PartialContent
            && file.Content is null && file.Handle is null && file.PhysicalPath is not null)
        {
            try
            {
                opened = FileVersion.OpenHandle(file.PhysicalPath);
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException && !DescriptorExhaustion.Is(ex))
            {
                return false;
            }

            if (Caching.FileStamp.FromHandle(opened) != file.Stamp)
            {
                opened.Dispose();
                return false;
            }
        }

        using Microsoft.Win32.SafeHandles.SafeFileHandle? owned = opened;
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
        if (settings.ContentType is not null)
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

        if (status == StatusCodes.Status206PartialContent)
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
            if (file.Content is not null)
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
                Log.Truncated(logger, settings.LogName, count);
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

    /// <summary>
    /// The status for a GET or HEAD of <paramref name="file"/>: preconditions (RFC 9110 13.2.2), then for GET a
    /// single byte range honoured only if If-Range allows it. <paramref name="start"/> and <paramref name="count"/>
    /// are the bytes to send for 200 and 206.
    /// </summary>
    internal static int Evaluate(
        IHeaderDictionary headers, FileVersion file, bool isGet, bool isHead, bool enableRanges, RequestHeaderCache? parsed, out long start, out long count)
    {
        int status = EvaluatePreconditions(headers, file, isGet || isHead, parsed);
        start = 0;
        count = file.Length;
        if (status != StatusCodes.Status200OK || !isGet || !enableRanges)
        {
            return status;
        }

        StringValues range = headers.Range;
        // A Range with several field lines is not a single range; like a multi-range it gets the whole file.
        if (range.Count != 1 || !IfRangeAllows(headers.IfRange, file, parsed))
        {
            return status;
        }

        RangeKind kind = parsed is not null
            ? parsed.Range(range.ToString(), file.Length, out start, out count)
            : ByteRangeParser.Parse(range.ToString(), file.Length, out start, out count);
        switch (kind)
        {
            case RangeKind.Single:
                return StatusCodes.Status206PartialContent;
            case RangeKind.Unsatisfiable:
                return StatusCodes.Status416RangeNotSatisfiable;
            default:
                start = 0;
                count = file.Length;
                return status;
        }
    }

    /// <summary>RFC 9110 13.2.2 steps 1-4; 200 when the request should proceed.</summary>
    internal static int EvaluatePreconditions(IHeaderDictionary headers, FileVersion file, bool isGetOrHead, RequestHeaderCache? parsed = null)
    {
        StringValues ifMatch = headers.IfMatch;
        if (!StringValues.IsNullOrEmpty(ifMatch))
        {
            // 13.1.1: strong comparison.
            if (EntityTagMatcher.AnyMatches(ifMatch, file.ETag, strong: true) == false)
            {
                return StatusCodes.Status412PreconditionFailed;
            }
        }
        else if (TryParseDate(headers.IfUnmodifiedSince, parsed, unmodified: true, out DateTimeOffset unmodifiedSince) && file.LastModified > unmodifiedSince)
        {
            // 13.1.4
            return StatusCodes.Status412PreconditionFailed;
        }

        StringValues ifNoneMatch = headers.IfNoneMatch;
        bool? noneMatchHit = StringValues.IsNullOrEmpty(ifNoneMatch) ? null
            : parsed is not null ? parsed.IfNoneMatch(ifNoneMatch, file.ETag)
            : EntityTagMatcher.AnyMatches(ifNoneMatch, file.ETag, strong: false);
        if (noneMatchHit is not null)
        {
            // 13.1.2: weak comparison; a match is 304 for GET/HEAD, 412 otherwise. If-Modified-Since is then ignored.
            return !noneMatchHit.Value ? StatusCodes.Status200OK
                : isGetOrHead ? StatusCodes.Status304NotModified : StatusCodes.Status412PreconditionFailed;
        }

        // 13.1.3: GET and HEAD only.
        if (isGetOrHead && TryParseDate(headers.IfModifiedSince, parsed, unmodified: false, out DateTimeOffset modifiedSince) && file.LastModified <= modifiedSince)
        {
            return StatusCodes.Status304NotModified;
        }

        return StatusCodes.Status200OK;
    }

    /// <summary>RFC 9110 13.1.5: a Range applies only if If-Range (when present) names the current version.</summary>
    internal static bool IfRangeAllows(StringValues ifRange, FileVersion file, RequestHeaderCache? parsed = null)
    {
        if (StringValues.IsNullOrEmpty(ifRange))
        {
            return true;
        }

        return parsed is not null ? parsed.IfRange(ifRange, file) : IfRangeAllowsUncached(ifRange, file);
    }

    internal static bool IfRangeAllowsUncached(StringValues ifRange, FileVersion file)
    {
        if (ifRange.Count != 1)
        {
            return false;
        }

        ReadOnlySpan<char> value = ifRange.ToString().AsSpan().Trim(" \t");
        if (value.StartsWith("W/", StringComparison.Ordinal) || value.StartsWith("\"", StringComparison.Ordinal))
        {
            ReadOnlySpan<char> rest = value;
            // A weak tag never matches here: If-Range uses strong comparison.
            return EntityTagMatcher.TryReadTag(ref rest, out ReadOnlySpan<char> tag, out bool weak)
                && rest.IsEmpty
                && EntityTagMatcher.Matches(tag, weak, file.ETag, strong: true);
        }

        // An HTTP-date must equal Last-Modified exactly.
        return HeaderUtilities.TryParseDate(value.ToString(), out DateTimeOffset date) && date == file.LastModified;
    }

    // RFC 9110 13.1.3/13.1.4: ignore the field when it is not one valid HTTP-date; a date in the future is
    // treated as invalid, as UseStaticFiles does.
    private static bool TryParseDate(StringValues values, RequestHeaderCache? parsed, bool unmodified, out DateTimeOffset date)
    {
        date = default;
        if (values.Count != 1)
        {
            return false;
        }

        DateTimeOffset? value;
        if (parsed is not null)
        {
            value = unmodified ? parsed.IfUnmodifiedSince(values.ToString()) : parsed.IfModifiedSince(values.ToString());
        }
        else
        {
            value = HeaderUtilities.TryParseDate(values.ToString(), out DateTimeOffset direct) ? direct : null;
        }

        date = value.GetValueOrDefault();
        return value.HasValue && date <= DateTimeOffset.UtcNow;
    }

    private void ApplyValidators(IHeaderDictionary headers, FileVersion file, FileResponseSettings settings)
    {
        // With string reuse on, these are the version's own strings, shared by every response to it.
        headers.ETag = reuseStrings ? file.ETag : file.FreshETag();
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

    private static void Prepare(HttpContext context, FileVersion file, FileResponseSettings settings)
        => settings.OnPrepareResponse?.Invoke(new FastFileResponseContext(context, file.PhysicalPath, file.FileInfo, file.ContentEncoding));
}
