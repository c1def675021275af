using System.Globalization;
using BenchmarkDotNet.Attributes;
using FastFiles.Benchmarks.Infrastructure;
using FastFiles.Files;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Net.Http.Headers;

namespace FastFiles.Benchmarks;

/// <summary>
/// Materializing the representation headers of a 200 (ETag, Last-Modified, Content-Type, Content-Length) and
/// setting them on a response, per request.
/// </summary>
/// <remarks>
/// Three rows: the stock UseStaticFiles way (content-type lookup, an <see cref="EntityTagHeaderValue"/> built and
/// formatted, <see cref="HeaderUtilities.FormatDate(DateTimeOffset)"/>, the length formatted); FastFiles with the
/// strings held by a cached <see cref="FileVersion"/> and content type; and FastFiles as the middleware runs
/// before any metadata cache exists, when every request opens a new <see cref="FileVersion"/> and so formats its
/// strings again. The last row keeps the cache's benefit honest.
/// </remarks>
[MemoryDiagnoser]
public class HeaderBenchmarks
{
    private const string SubPath = "/js/app.js";

    private readonly TestFiles _files = new();
    private readonly FileExtensionContentTypeProvider _contentTypes = new();
    private FileVersion _file = null!;
    private IHeaderDictionary _headers = null!;
    private DateTime _lastWriteUtc;
    private long _length;
    private string _cachedContentType = null!;
    private string _cachedContentLength = null!;

    [GlobalSetup]
    public void Setup()
    {
        string path = _files.Create(24 * 1024);
        _file = FileVersion.Open(path, contentEncoding: null);
        _lastWriteUtc = File.GetLastWriteTimeUtc(path);
        _length = _file.Length;
        _contentTypes.TryGetContentType(SubPath, out string? contentType);
        _cachedContentType = contentType!;
        _cachedContentLength = _length.ToString(CultureInfo.InvariantCulture);
        _headers = new DefaultHttpContext().Response.Headers;
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _file.Dispose();
        _files.Dispose();
    }

    [Benchmark(Baseline = true, Description = "Stock (per-request formatting)")]
    public int Stock()
    {
        IHeaderDictionary headers = _headers;
        headers.Clear();
        _contentTypes.TryGetContentType(SubPath, out string? contentType);
        // UseStaticFiles: seconds-resolution time, tag = file time XOR length in hex, wrapped in a parsed value.
        var lastModified = new DateTimeOffset(_lastWriteUtc.Ticks - (_lastWriteUtc.Ticks % TimeSpan.TicksPerSecond), TimeSpan.Zero);
        var etag = new EntityTagHeaderValue("\"" + Convert.ToString(lastModified.ToFileTime() ^ _length, 16) + "\"");
        headers.ContentType = contentType;
        headers.ETag = etag.ToString();
        headers.LastModified = HeaderUtilities.FormatDate(lastModified);
        headers.ContentLength = _length;
        return headers.Count;
    }

    [Benchmark(Description = "FastFiles (cached strings)")]
    public int FastFilesCached()
    {
        IHeaderDictionary headers = _headers;
        headers.Clear();
        headers.ContentType = _cachedContentType;
        headers.ETag = _file.ETag;
        headers.LastModified = _file.LastModifiedHeader;
        headers[HeaderNames.ContentLength] = _cachedContentLength;
        return headers.Count;
    }

    [Benchmark(Description = "FastFiles (no cache: FileVersion per request)")]
    public int FastFilesUncached()
    {
        IHeaderDictionary headers = _headers;
        headers.Clear();
        _contentTypes.TryGetContentType(SubPath, out string? contentType);
        var lastModified = new DateTimeOffset(_lastWriteUtc.Ticks - (_lastWriteUtc.Ticks % TimeSpan.TicksPerSecond), TimeSpan.Zero);
        headers.ContentType = contentType;
        headers.ETag = FileVersion.FormatETag(_lastWriteUtc.Ticks, _length, contentEncoding: null);
        headers.LastModified = HeaderUtilities.FormatDate(lastModified);
        headers.ContentLength = _length;
        return headers.Count;
    }
}
