using System.Globalization;
using FastFiles.Files;
using Microsoft.AspNetCore.Http;

namespace FastFiles.Http;

/// <summary>Where the body of a planned response comes from.</summary>
internal enum ResponseBody
{
    /// <summary>No body: HEAD, an empty range, or a status without content (304, 412, 416).</summary>
    None,

    /// <summary>The version's cached bytes (<see cref="FileVersion.Content"/>).</summary>
    CachedBytes,

    /// <summary>A range of a physical file: the version's open handle, or its path opened again and checked.</summary>
    FileHandle,

    /// <summary>A range of a file provider's stream (<see cref="FileVersion.FileInfo"/>).</summary>
    Stream,

    /// <summary>Several ranges as <c>multipart/byteranges</c> (<see cref="FileResponsePlan.Multipart"/>), from any of the sources above.</summary>
    Multipart,
}

/// <summary>
/// The response to a GET or HEAD for one file version, decided once: status, every header value FastFiles sets, and
/// the body's source and range. Built from header values and the version alone (no <see cref="HttpContext"/>), so
/// every sender (the middleware, the results, a connection-level sender) produces the same response from it.
/// </summary>
internal readonly struct FileResponsePlan
{
    private const string AcceptRangesBytes = "bytes";
    private const string VaryAcceptEncoding = "Accept-Encoding";

    public int StatusCode { get; private init; }

    /// <summary>The first body byte of a single-part body.</summary>
    public long Start { get; private init; }

    /// <summary>Content-Length for 200 and 206 (also for HEAD); <see langword="null"/> for 304, 412 and 416.</summary>
    public long? ContentLength { get; private init; }

    public ResponseBody Body { get; private init; }

    public string? ETag { get; private init; }

    public string? LastModified { get; private init; }

    /// <summary>
    /// Whether the sender sets Date from the clock: Last-Modified is so recent that the server's cached Date may be a
    /// second earlier (RFC 9110 8.8.2.1).
    /// </summary>
    public bool DateFromClock { get; private init; }

    public string? CacheControl { get; private init; }

    public string? Vary { get; private init; }

    public string? ContentType { get; private init; }

    public string? AcceptRanges { get; private init; }

    public string? ContentEncoding { get; private init; }

    public string? ContentDisposition { get; private init; }

    public string? ContentRange { get; private init; }

    /// <summary>The parts of a multipart 206 (RFC 9110 14.6), else <see langword="null"/>.</summary>
    public MultipartByteRanges? Multipart { get; private init; }

    /// <summary>The bytes to send: the whole body for <see cref="ResponseBody"/> other than <see cref="ResponseBody.None"/>.</summary>
    public long Count => Body == ResponseBody.None ? 0 : ContentLength.GetValueOrDefault();

    /// <summary>
    /// Plans the response: preconditions and range by <see cref="FileRequestEvaluator"/>, then the header values. With
    /// <paramref name="reuseStrings"/>, validators are the version's own strings, shared by every response to it;
    /// without, they are formatted afresh.
    /// </summary>
    public static FileResponsePlan Create(in FileRequest request, FileVersion file, in FileResponseSettings settings, bool reuseStrings, int maxRanges = 1)
    {
        bool isHead = request.IsHead;
        // Several ranges of a content-coded variant get the whole variant (RFC 9110 14.2: a server MAY ignore Range). A
        // multipart 206 would carry Content-Encoding, which clients apply to the multipart body itself and fail to decode
        // (curl --compressed); nginx's gzip_static answers such requests 200 too.
        if (file.ContentEncoding is not null)
        {
            maxRanges = 1;
        }

        int status = FileRequestEvaluator.Evaluate(
            request.Headers, file, request.IsGet, isHead, settings.EnableRangeProcessing, request.Memo, out long start, out long count, out ByteRange[]? ranges, maxRanges,
            codings: settings.VaryAcceptEncoding);
        switch (status)
        {
            // Both depend on the representation Accept-Encoding selected (its tag, its length): Vary says so as on a 200
            // (RFC 9110 12.5.5), so a cache never answers another coding's request with them.
            case StatusCodes.Status412PreconditionFailed:
                return new FileResponsePlan { StatusCode = status, Vary = VaryOf(settings) };
            case StatusCodes.Status416RangeNotSatisfiable:
                // RFC 9110 15.5.17: say how long the representation is.
                return new FileResponsePlan
                {
                    StatusCode = status,
                    ContentRange = string.Create(CultureInfo.InvariantCulture, $"bytes */{file.Length}"),
                    Vary = VaryOf(settings),
                };
            case StatusCodes.Status304NotModified:
                return NotModified(file, settings, reuseStrings);
        }

        MultipartByteRanges? multipart = ranges is null ? null : MultipartByteRanges.Create(ranges, file.Length, settings.ContentType);
        if (multipart is not null)
        {
            count = multipart.ContentLength;
        }

        ResponseBody body = isHead || count == 0 ? ResponseBody.None
            : multipart is not null ? ResponseBody.Multipart
            : file.Content is not null ? ResponseBody.CachedBytes
            : file.Handle is not null || file.PhysicalPath is not null ? ResponseBody.FileHandle
            : ResponseBody.Stream;
        return Content(file, settings, reuseStrings, status, start, count, body, multipart);
    }

    /// <summary>
    /// The 200 for the whole representation (an unconditional GET): every header field FastFiles sets on it. A sender
    /// that prebuilds response bytes (the static lane) renders them from this plan and <see cref="NotModified"/>, so
    /// the fields and their values are decided here once for every sender.
    /// </summary>
    public static FileResponsePlan Representation(FileVersion file, in FileResponseSettings settings)
        => Content(
            file,
            settings,
            reuseStrings: true,
            StatusCodes.Status200OK,
            start: 0,
            file.Length,
            file.Length == 0 ? ResponseBody.None : file.Content is not null ? ResponseBody.CachedBytes : ResponseBody.FileHandle,
            multipart: null);

    /// <summary>304: the validators and caching fields a 200 would have carried (RFC 9110 15.4.5).</summary>
    public static FileResponsePlan NotModified(FileVersion file, in FileResponseSettings settings, bool reuseStrings = true)
        => Content(file, settings, reuseStrings, StatusCodes.Status200OK, 0, file.Length, ResponseBody.None, multipart: null).AsNotModified();

    /// <summary>
    /// The 304 for the representation this 200 describes, with its very field values (a version's tag can change
    /// once, when its content hash arrives; both prebuilt responses must carry the same one).
    /// </summary>
    public FileResponsePlan AsNotModified() => new()
    {
        StatusCode = StatusCodes.Status304NotModified,
        ETag = ETag,
        LastModified = LastModified,
        DateFromClock = DateFromClock,
        CacheControl = CacheControl,
        Vary = Vary,
    };

    private static string? VaryOf(in FileResponseSettings settings) => settings.VaryAcceptEncoding ? VaryAcceptEncoding : null;

    private static FileResponsePlan Content(
        FileVersion file, in FileResponseSettings settings, bool reuseStrings, int status, long start, long count, ResponseBody body, MultipartByteRanges? multipart) => new()
    {
        StatusCode = status,
        Start = start,
        ContentLength = count,
        Body = body,
        ETag = reuseStrings ? file.ETag : file.FreshETag(),
        LastModified = reuseStrings ? file.LastModifiedHeader : file.FreshLastModifiedHeader(),
        DateFromClock = file.DateMayPrecedeLastModified(),
        CacheControl = settings.CacheControl,
        Vary = VaryOf(settings),
        // RFC 9110 14.6: with several parts the media type moves into each part.
        ContentType = multipart?.ContentType ?? settings.ContentType,
        AcceptRanges = settings.EnableRangeProcessing ? AcceptRangesBytes : null,
        ContentEncoding = file.ContentEncoding,
        ContentDisposition = settings.ContentDisposition,
        Multipart = multipart,
        ContentRange = multipart is null && status == StatusCodes.Status206PartialContent
            ? string.Create(CultureInfo.InvariantCulture, $"bytes {start}-{start + count - 1}/{file.Length}")
            : null,
    };
}
