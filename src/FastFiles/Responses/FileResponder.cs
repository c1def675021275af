using System.Buffers;
using System.IO.Pipelines;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using FastFiles.IO;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Primitives;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Responses;

/// <summary>
/// Answers a GET or HEAD for one file version: conditional requests (RFC 9110 13), ranges (RFC 9110 14), the
/// response headers, and the body through <see cref="FileBody"/>. Shared by the middleware and the results.
/// </summary>
internal sealed class FileResponder(FastFilesOptions options, ILogger logger, bool reuseStrings = true)
{
    // HTTP/2 and HTTP/3 cached bodies larger than this go out in write+flush chunks of this size, so the frame writer
    // starts on the first DATA frames while the rest is copied (measured 1.18x on one stream of 64 KiB:
    // benchmarks/results/h2-chunked-2026-11-21). 16 KiB is HTTP/2's default maximum frame size.
    private const int ChunkedWriteSize = 16 * 1024;

    /// <summary>
    /// The responder for an app: <see cref="FastFilesOptions"/> from <paramref name="services"/> (bound from the
    /// <c>FastFiles</c> section with or without <c>AddFastFiles</c>), with
    /// <see cref="FastFilesOptions.DisableStringReuse"/> settled by <see cref="FastFilesOptionsSetup"/>.
    /// </summary>
    public static FileResponder Create(IServiceProvider? services, FastFilesOptions? options, ILogger logger)
    {
        options ??= services is null ? new FastFilesOptions() : FastFilesOptionsSource.FastFilesOptions(services);
        return new FileResponder(options, logger, reuseStrings: !FastFilesOptionsSetup.DisablesStringReuse(options, services));
    }

    /// <summary>The request's method and header values, and the connection's memo unless string reuse is off: read once.</summary>
    public FileRequest ReadRequest(HttpContext context)
    {
        string method = context.Request.Method;
        bool isGet = HttpMethods.IsGet(method);
        return new FileRequest(
            FileRequestHeaders.From(context.Request.Headers),
            isGet,
            !isGet && HttpMethods.IsHead(method),
            reuseStrings ? context.Features.Get<RequestHeaderCache>() : null);
    }

    /// <summary>
    /// Sends the response. Returns <see langword="false"/> without touching the response when a body had to be read
    /// from disk and the file on disk is no longer <paramref name="file"/> (a cached version gone stale); the caller
    /// then refreshes its entry and tries again.
    /// </summary>
    public Task<bool> SendAsync(HttpContext context, FileVersion file, FileResponseSettings settings)
        => SendAsync(context, ReadRequest(context), file, settings);

    /// <inheritdoc cref="SendAsync(HttpContext, FileVersion, FileResponseSettings)"/>
    public async Task<bool> SendAsync(HttpContext context, FileRequest fileRequest, FileVersion file, FileResponseSettings settings)
    {
        HttpRequest request = context.Request;
        HttpResponse response = context.Response;

        // A content-hash ETag still being computed: entity-tag conditions wait for it, so they are only ever compared
        // with the real tag; unconditional responses go out without an ETag meanwhile.
        if (file.ContentHash is { ETag: null } pending && fileRequest.Headers.HasEntityTagCondition
            && !await pending.WhenNeededByAsync(context.RequestAborted))
        {
            // The client left while its file was hashed: nothing to answer, nothing to retry.
            return true;
        }

        FileResponsePlan plan = FileResponsePlan.Create(fileRequest, file, settings, reuseStrings, options.MaxRanges);

        // A body from disk for a version without an open handle (a cached entry): lease the descriptor the cache keeps
        // open, or open the file now, before any header is set, and make sure it is still the version the headers
        // will describe (an in-place write keeps the descriptor but changes the stamp).
        VersionHandle lease = default;
        if (plan.Body is ResponseBody.FileHandle or ResponseBody.Multipart
            && file.Content is null && file.Handle is null && file.PhysicalPath is not null)
        {
            try
            {
                if (!VersionHandle.TryAcquire(file, leaseOnly: false, out lease))
                {
                    return false;
                }
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException && !DescriptorExhaustion.Is(ex))
            {
                return false;
            }
        }

        using VersionHandle held = lease;
        SafeFileHandle? owned = lease.Handle;
        // Before OnPrepareResponse, which may still change it, as UseStaticFiles does. Only HTTPS asks (the response
        // compression middleware's EnableForHttps), so plaintext requests skip the feature lookup.
        if (settings.HttpsCompression != HttpsCompressionMode.Default && plan.Body != ResponseBody.None && request.IsHttps
            && context.Features.Get<IHttpsCompressionFeature>() is { } httpsCompression)
        {
            httpsCompression.Mode = settings.HttpsCompression;
        }

        Apply(plan, response, settings.ReplacesAppStatus);
        if (settings.OnPrepareResponse is not null || settings.OnPrepareResponseAsync is not null)
        {
            var prepared = new FastFileResponseContext(
                context, file.PhysicalPath, file.FileInfo, file.ContentEncoding, Sidecar.OriginalPath(file.PhysicalPath, file.ContentEncoding));
            settings.OnPrepareResponse?.Invoke(prepared);
            if (settings.OnPrepareResponseAsync is { } prepareAsync)
            {
                await prepareAsync(prepared);
            }
        }
        int status = plan.StatusCode;
        long start = plan.Start;
        long count = plan.Count;
        switch (status)
        {
            case StatusCodes.Status412PreconditionFailed:
                Log.PreconditionFailed(logger, settings.LogName);
                return true;
            case StatusCodes.Status416RangeNotSatisfiable:
                Log.RangeNotSatisfiable(logger, settings.LogName);
                return true;
            case StatusCodes.Status304NotModified:
                Log.NotModified(logger, settings.LogName);
                return true;
        }

        if (plan.Body == ResponseBody.None)
        {
            Log.Served(logger, settings.LogName, status, 0);
            return true;
        }

        // A cached body long enough for the connection's zero-copy sender goes from the descriptor the cache keeps for it
        // (ZeroCopySendFileOptions.CachedMinimumLength); the bytes in memory when the sender declines.
        IZeroCopyFileSender? cachedSender = plan.Body == ResponseBody.CachedBytes && plan.Multipart is null
            && CachedBodySender(context, file) is { } sender && count >= sender.CachedMinimumLength ? sender : null;

        FileSendStatus result;
        CancellationToken aborted = context.RequestAborted;
        try
        {
            if (plan.Body != ResponseBody.CachedBytes || cachedSender is not null)
            {
                // File bodies reach Kestrel through Advance + flush, which its HTTP/1.1 rate check does not count: size
                // the check's grace for one copy batch. (A cached body is written once and flushed by Kestrel after the
                // response ends, outside the check.)
                ResponseDataRate.AllowUncountedFlushes(context.Features.Get<IHttpMinResponseDataRateFeature>(), Math.Min(count, FileBodyWriter.FlushThreshold));
            }

            // Start first: the headers and the first body bytes then leave in one write.
            await response.StartAsync(aborted);
            if (plan.Multipart is { } multipart)
            {
                result = await SendMultipartAsync(context, file, owned, multipart, aborted)
                    ?? await WriteMultipartAsync(response, file, owned ?? file.Handle, multipart, aborted);
            }
            else if (cachedSender is not null && await SendCachedAsync(context.Features, cachedSender, file, start, count, multipart: null, aborted) is { } sent)
            {
                result = sent;
            }
            else if (plan.Body == ResponseBody.CachedBytes)
            {
                // Cached bytes: one copy into the pipe, no file-system call. On HTTP/1.1 no flush of our own:
                // Kestrel flushes when the request completes, so headers and body leave in one write, and skipping
                // the explicit flush saves the 72 bytes Kestrel allocates per started-then-flushed response
                // (measured in the allocation tests).
                // Over HTTP/1.x a body larger than one copy batch goes in batches too (a MaxCachedFileSize raised to
                // megabytes): written whole, it sat in the connection's output until a slow client read it, past
                // MaxResponseBufferSize (100 clients that did not read an 8 MiB file held 886 MB).
                int chunk = MemoryBatchSize(request.Protocol);
                if (count > chunk)
                {
                    result = await WriteInBatchesAsync(response.BodyWriter, file.Content!.AsMemory((int)start, (int)count), chunk, aborted);
                }
                else
                {
                    response.BodyWriter.Write(file.Content!.AsSpan((int)start, (int)count));
                    result = ServerFlushesAtEnd(context) || !(await response.BodyWriter.FlushAsync(aborted)).IsCanceled
                        ? FileSendStatus.Completed
                        : FileSendStatus.ClientDisconnected;
                }

                if (result == FileSendStatus.Completed && (cachedSender is not null || ZeroCopySenders.AnyInProcess))
                {
                    // On a zero-copy send path connection a body from memory is a copy too (fastfiles.send_path.bytes).
                    (cachedSender ?? context.Features.Get<IZeroCopyFileSender>())?.Copied(count);
                }
            }
            else if (plan.Body == ResponseBody.FileHandle && (owned ?? file.Handle) is { } handle)
            {
                // The response ends when we return, so Kestrel's own final flush sends the tail.
                result = await FileBody.WriteAsync(
                    context.Features, handle, file.Stamp, start, count, ReadSizePolicy.For(options, request.Protocol), options.SynchronousReadThreshold, aborted,
                    flushAtEnd: !ServerFlushesAtEnd(context));
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
                return true;
            case FileSendStatus.Truncated:
                Log.FileTruncated(logger, settings.LogName, count);
                break;
            case FileSendStatus.Changed:
                Log.FileRewritten(logger, settings.LogName, count);
                FastFilesMetrics.Resolve(context.RequestServices).RewrittenDuringSend();
                break;
            default:
                // Like UseStaticFiles: swallow it.
                Log.ClientDisconnected(logger, settings.LogName);
                break;
        }

        // HTTP/1.1: the connection ends; HTTP/2: the stream is reset. Either way a cut-short body cannot look complete.
        await ResponseAbort.AbortAsync(context.Features.Get<IHttpRequestLifetimeFeature>()!);
        return true;
    }

    // Whether a Vary value already names the field (or is "*", which names them all): whole list members, not substrings.
    private static bool VaryNames(StringValues vary, string field)
    {
        foreach (string? value in vary)
        {
            foreach (Range range in value.AsSpan().Split(','))
            {
                ReadOnlySpan<char> member = value.AsSpan()[range].Trim(" \t");
                if (member is "*" || member.Equals(field, StringComparison.OrdinalIgnoreCase))
                {
                    return true;
                }
            }
        }

        return false;
    }

    // Kestrel sends what is left in its writer when the request ends, so a body written last needs no flush of ours. A
    // body the app replaced (a middleware capturing Response.Body, output caching) is read by that middleware when the
    // next one returns, before anything completes the writer over it: its bytes must be flushed before we return.
    private static bool ServerFlushesAtEnd(HttpContext context)
        => context.Features.Get<IHttpResponseBodyFeature>() is { } body && KestrelFeatures.IsKestrelBody(body);

    // The connection's zero-copy sender for a cached body that may go from the descriptor the cache keeps. HTTP/1.x only:
    // an h2c stream sees the sender too, which would decline it after the lease.
    private static IZeroCopyFileSender? CachedBodySender(HttpContext context, FileVersion file)
        => file.SharedHandle is not null && (HttpProtocol.IsHttp11(context.Request.Protocol) || HttpProtocol.IsHttp10(context.Request.Protocol))
            ? context.Features.Get<IZeroCopyFileSender>()
            : null;

    // The cache's descriptor, leased for this body (a range, or a multipart body), if it is still the version the headers
    // describe; null (nothing written) when the descriptor is retired, the file changed, or the sender declines the response.
    private static async ValueTask<FileSendStatus?> SendCachedAsync(
        IFeatureCollection features, IZeroCopyFileSender sender, FileVersion file, long start, long count, MultipartByteRanges? multipart, CancellationToken aborted)
    {
        if (!VersionHandle.TryAcquire(file, leaseOnly: true, out VersionHandle lease))
        {
            return null;
        }

        using (lease)
        {
            return multipart is null
                ? await sender.TrySendAsync(features, lease.Handle!, file.Stamp, stampChecked: true, start, count, aborted)
                : await sender.TrySendMultipartAsync(features, lease.Handle!, file.Stamp, stampChecked: true, multipart, aborted);
        }
    }

    // A multipart body through the connection's zero-copy sender, each part's range from a descriptor: the one this
    // response holds for a body from disk, or for a cached body whose parts are on average as long as a cached single
    // range must be (CachedMinimumLength), the one the cache keeps. Null (nothing written) when there is no sender, no
    // descriptor, or the sender declines: the parts are then copied. Against copying them, measured in
    // benchmarks/results/multipart-2026-11-26.
    private static async ValueTask<FileSendStatus?> SendMultipartAsync(
        HttpContext context, FileVersion file, SafeFileHandle? owned, MultipartByteRanges multipart, CancellationToken aborted)
    {
        if (file.Content is null)
        {
            return context.Features.Get<IZeroCopyFileSender>() is { } sender && (owned ?? file.Handle) is { } handle
                ? await sender.TrySendMultipartAsync(context.Features, handle, file.Stamp, stampChecked: owned is not null, multipart, aborted)
                : null;
        }

        return CachedBodySender(context, file) is { } cachedSender && multipart.PartsReach(cachedSender.CachedMinimumLength)
            ? await SendCachedAsync(context.Features, cachedSender, file, 0, 0, multipart, aborted)
            : null;
    }

    // Each part's header block, then its bytes, then the closing delimiter. The last part from disk checks the file's stamp
    // before its last bytes leave, which covers writes at any time since the headers were built. Each part from disk ends with a flush, so the pipe never holds more than a part's
    // last batch (without it, four 64 KiB parts piled up unflushed and cost 97 KB of allocations per response:
    // benchmarks/results/parity-2026-11-23/NOTE.md).
    private async ValueTask<FileSendStatus> WriteMultipartAsync(
        HttpResponse response, FileVersion file, SafeFileHandle? handle, MultipartByteRanges multipart, CancellationToken aborted)
    {
        PipeWriter writer = response.BodyWriter;
        string protocol = response.HttpContext.Request.Protocol;
        int bufferSize = ReadSizePolicy.For(options, protocol);
        int chunk = MemoryBatchSize(protocol);
        int unflushed = 0;
        MultipartByteRanges.Part[] parts = multipart.Parts;
        for (int i = 0; i < parts.Length; i++)
        {
            MultipartByteRanges.Part part = parts[i];
            writer.Write(part.Header.Span);
            (long start, long count) = (part.Range.Start, part.Range.Count);
            FileStamp? stamp = i == parts.Length - 1 ? file.Stamp : null;
            // Parts from memory longer than a batch go in batches, as a whole body does.
            FileSendStatus status = file.Content is not null
                    ? count > chunk ? await WriteInBatchesAsync(writer, file.Content.AsMemory((int)start, (int)count), chunk, aborted) : Copy(writer, file.Content, start, count)
                : handle is not null ? await FileBodyWriter.WriteAsync(writer, handle, stamp, start, count, bufferSize, options.SynchronousReadThreshold, aborted)
                : await StreamBodyWriter.WriteAsync(writer, file.FileInfo!, start, count, bufferSize, aborted);
            if (status != FileSendStatus.Completed)
            {
                return status;
            }

            // Short parts from memory are flushed once a batch of them is written, as a long one is.
            if (file.Content is not null && (unflushed += part.Header.Length + (int)count) >= chunk)
            {
                unflushed = 0;
                if ((await writer.FlushAsync(aborted)).IsCanceled)
                {
                    return FileSendStatus.ClientDisconnected;
                }
            }
        }

        // An explicit flush: Kestrel's HTTP/1.1 producer flushes at the end only what it counted as unflushed, and bytes
        // advanced after an earlier flush (the later parts and the closing delimiter) are not counted.
        writer.Write(multipart.Closing.Span);
        FlushResult flushed = await writer.FlushAsync(aborted);
        if (flushed.IsCanceled)
        {
            return FileSendStatus.ClientDisconnected;
        }

        response.HttpContext.Features.Get<IZeroCopyFileSender>()?.Copied(multipart.ContentLength);
        return FileSendStatus.Completed;

        static FileSendStatus Copy(PipeWriter writer, byte[] content, long start, long count)
        {
            writer.Write(content.AsSpan((int)start, (int)count));
            return FileSendStatus.Completed;
        }
    }

    /// <summary>The batch a body from memory is written in: one copy batch (HTTP/1.x), or 16 KiB on HTTP/2 and HTTP/3.</summary>
    internal static int MemoryBatchSize(string protocol)
        => HttpProtocol.IsHttp2(protocol) || HttpProtocol.IsHttp3(protocol) ? ChunkedWriteSize : FileBodyWriter.FlushThreshold;

    // A body from memory in flushed batches, so the connection's output holds one batch at a time however slowly the
    // client reads (Kestrel's pipe makes each flush wait for room).
    internal static async ValueTask<FileSendStatus> WriteInBatchesAsync(PipeWriter writer, ReadOnlyMemory<byte> body, int chunk, CancellationToken aborted)
    {
        while (!body.IsEmpty)
        {
            int n = Math.Min(body.Length, chunk);
            FlushResult flushed = await writer.WriteAsync(body[..n], aborted);
            body = body[n..];
            if (flushed.IsCanceled || (flushed.IsCompleted && !body.IsEmpty))
            {
                return FileSendStatus.ClientDisconnected;
            }
        }

        return FileSendStatus.Completed;
    }

    /// <summary>
    /// Sets the plan's status (see <see cref="FileResponseSettings.ReplacesAppStatus"/>) and headers on
    /// <paramref name="response"/>.
    /// </summary>
    public static void Apply(in FileResponsePlan plan, HttpResponse response, bool replacesAppStatus)
    {
        if (plan.StatusCode != StatusCodes.Status200OK && (replacesAppStatus || response.StatusCode == StatusCodes.Status200OK))
        {
            response.StatusCode = plan.StatusCode;
        }

        // The typed properties: Kestrel's header dictionary sets them without looking the name up.
        IHeaderDictionary headers = response.Headers;
        if (plan.ETag is not null)
        {
            headers.ETag = plan.ETag;
        }

        if (plan.LastModified is not null)
        {
            headers.LastModified = plan.LastModified;
            if (plan.DateFromClock)
            {
                headers.Date = HttpDateClock.Current;
            }
        }

        if (plan.CacheControl is not null)
        {
            headers.CacheControl = plan.CacheControl;
        }

        if (plan.Vary is not null)
        {
            // Added to a Vary set before us (Cookie, Origin): what the response varies by still holds (RFC 9110 12.5.5).
            StringValues vary = headers.Vary;
            if (vary.Count == 0)
            {
                headers.Vary = plan.Vary;
            }
            else if (!VaryNames(vary, plan.Vary))
            {
                headers.Vary = StringValues.Concat(vary, plan.Vary);
            }
        }

        if (plan.ContentType is not null)
        {
            headers.ContentType = plan.ContentType;
        }

        if (plan.AcceptRanges is not null)
        {
            headers.AcceptRanges = plan.AcceptRanges;
        }

        if (plan.ContentEncoding is not null)
        {
            headers.ContentEncoding = plan.ContentEncoding;
        }

        if (plan.ContentDisposition is not null)
        {
            headers.ContentDisposition = plan.ContentDisposition;
        }

        if (plan.ContentRange is not null)
        {
            headers.ContentRange = plan.ContentRange;
        }

        if (plan.ContentLength is { } length)
        {
            response.ContentLength = length;
        }
    }
}
