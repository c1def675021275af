using BenchmarkDotNet.Attributes;
using FastFiles.Benchmarks.Infrastructure;
using FastFiles.Files;
using FastFiles.Http;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Headers;
using Microsoft.Net.Http.Headers;

namespace FastFiles.Benchmarks;

/// <summary>
/// Conditional-request and range evaluation for one request, with the validators already known: FastFiles'
/// span-based <c>FileRequestEvaluator.Evaluate</c> (preconditions, If-Range and the Range header) against the stock
/// approach of parsing the typed headers (<c>GetTypedHeaders()</c>) and comparing the parsed values, as
/// UseStaticFiles does.
/// </summary>
[MemoryDiagnoser]
public class PreconditionBenchmarks
{
    private readonly TestFiles _files = new();
    private FileVersion _file = null!;
    private HttpRequest _fastRequest = null!;
    private HttpRequest _stockRequest = null!;
    private EntityTagHeaderValue _stockETag = null!;
    private DateTimeOffset _lastModified;
    private long _length;

    public enum Scenario
    {
        /// <summary>No conditional or range headers: the common first visit.</summary>
        Plain,

        /// <summary>A revalidation that ends in 304 (If-None-Match with the current tag, as browsers send).</summary>
        IfNoneMatch,

        /// <summary>A revalidation by date only.</summary>
        IfModifiedSince,

        /// <summary>A resumed download: Range with If-Range naming the current tag.</summary>
        RangeIfRange,
    }

    [Params(Scenario.Plain, Scenario.IfNoneMatch, Scenario.IfModifiedSince, Scenario.RangeIfRange)]
    public Scenario Case { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        string path = _files.Create(64 * 1024);
        _file = FileVersion.Open(path, contentEncoding: null);
        _length = _file.Length;
        _lastModified = _file.LastModified;
        // UseStaticFiles' tag: seconds-resolution file time XOR length, in hex.
        _stockETag = new EntityTagHeaderValue("\"" + Convert.ToString(_lastModified.ToFileTime() ^ _length, 16) + "\"");

        _fastRequest = CreateRequest(_file.ETag!);
        _stockRequest = CreateRequest(_stockETag.Tag.ToString());
    }

    [GlobalCleanup]
    public void Cleanup()
    {
        _file.Dispose();
        _files.Dispose();
    }

    private HttpRequest CreateRequest(string etag)
    {
        var context = new DefaultHttpContext();
        HttpRequest request = context.Request;
        request.Method = HttpMethods.Get;
        IHeaderDictionary headers = request.Headers;
        // Browsers send these on every request; they are here so both sides skip past fields they do not need.
        headers.Accept = "*/*";
        headers.AcceptEncoding = "gzip, deflate, br, zstd";
        switch (Case)
        {
            case Scenario.IfNoneMatch:
                headers.IfNoneMatch = etag;
                headers.IfModifiedSince = HeaderUtilities.FormatDate(_lastModified);
                break;
            case Scenario.IfModifiedSince:
                headers.IfModifiedSince = HeaderUtilities.FormatDate(_lastModified);
                break;
            case Scenario.RangeIfRange:
                headers.Range = "bytes=1000-";
                headers.IfRange = etag;
                break;
        }

        return request;
    }

    [Benchmark(Baseline = true, Description = "Stock (GetTypedHeaders + parsed values)")]
    public long Stock()
    {
        HttpRequest request = _stockRequest;
        RequestHeaders typed = request.GetTypedHeaders();
        int status = StatusCodes.Status200OK;

        IList<EntityTagHeaderValue> ifMatch = typed.IfMatch;
        if (ifMatch.Count > 0 && !AnyMatch(ifMatch, _stockETag, strong: true))
        {
            status = StatusCodes.Status412PreconditionFailed;
        }
        else if (ifMatch.Count == 0 && typed.IfUnmodifiedSince is DateTimeOffset unmodifiedSince && _lastModified > unmodifiedSince)
        {
            status = StatusCodes.Status412PreconditionFailed;
        }

        if (status == StatusCodes.Status200OK)
        {
            IList<EntityTagHeaderValue> ifNoneMatch = typed.IfNoneMatch;
            if (ifNoneMatch.Count > 0)
            {
                if (AnyMatch(ifNoneMatch, _stockETag, strong: false))
                {
                    status = StatusCodes.Status304NotModified;
                }
            }
            else if (typed.IfModifiedSince is DateTimeOffset modifiedSince && _lastModified <= modifiedSince)
            {
                status = StatusCodes.Status304NotModified;
            }
        }

        long start = 0;
        long count = _length;
        if (status == StatusCodes.Status200OK)
        {
            RangeHeaderValue? range = typed.Range;
            if (range is not null && range.Ranges.Count == 1 && IfRangeAllows(typed.IfRange))
            {
                RangeItemHeaderValue item = range.Ranges.First();
                if (TryNormalize(item, _length, out start, out count))
                {
                    status = StatusCodes.Status206PartialContent;
                }
                else
                {
                    status = StatusCodes.Status416RangeNotSatisfiable;
                }
            }
        }

        return status + start + count;
    }

    [Benchmark(Description = "FastFiles (FileRequestEvaluator.Evaluate)")]
    public long FastFiles()
    {
        IHeaderDictionary headers = _fastRequest.Headers;
        int status = FileRequestEvaluator.Evaluate(FileRequestHeaders.From(headers), _file, isGet: true, isHead: false, enableRanges: true, parsed: null, out long start, out long count, out _, maxRanges: 64);
        return status + start + count;
    }

    private static bool AnyMatch(IList<EntityTagHeaderValue> tags, EntityTagHeaderValue current, bool strong)
    {
        foreach (EntityTagHeaderValue tag in tags)
        {
            if (tag.Equals(EntityTagHeaderValue.Any) || tag.Compare(current, useStrongComparison: strong))
            {
                return true;
            }
        }

        return false;
    }

    private bool IfRangeAllows(RangeConditionHeaderValue? ifRange)
    {
        if (ifRange is null)
        {
            return true;
        }

        return ifRange.LastModified is DateTimeOffset date
            ? date == _lastModified
            : ifRange.EntityTag is not null && !ifRange.EntityTag.IsWeak && ifRange.EntityTag.Compare(_stockETag, useStrongComparison: true);
    }

    private static bool TryNormalize(RangeItemHeaderValue item, long length, out long start, out long count)
    {
        start = 0;
        count = 0;
        if (item.From is long from)
        {
            if (from >= length)
            {
                return false;
            }

            long to = item.To is long last && last < length ? last : length - 1;
            start = from;
            count = to - from + 1;
            return true;
        }

        if (item.To is long suffix && suffix > 0 && length > 0)
        {
            count = Math.Min(suffix, length);
            start = length - count;
            return true;
        }

        return false;
    }
}
