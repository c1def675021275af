using FastFiles.Files;
using FastFiles.Http;
using Microsoft.Extensions.Primitives;

namespace FastFiles.Tests.Http;

/// <summary>
/// RFC 9110 sections 13 (conditional requests) and 14 (range requests) for one file version, case by case, with and
/// without the per-connection memo (both must give the same answer).
/// </summary>
public sealed class FileRequestEvaluatorTests : IDisposable
{
    private const long Length = 1000;

    // Last-Modified is 2026-01-02 03:04:05 UTC (a Friday); the file's own time has sub-second digits, dropped by the header.
    private static readonly DateTime Modified = new(2026, 1, 2, 3, 4, 5, 678, DateTimeKind.Utc);
    private static readonly DateTimeOffset Now = new(2026, 6, 1, 0, 0, 0, TimeSpan.Zero);
    private static readonly string ETag = FileVersion.FormatETag(Modified.Ticks, Length, null);

    private readonly string _path = Path.Combine(Path.GetTempPath(), $"evaluator-{Guid.NewGuid():N}.bin");
    private readonly FileVersion _file;

    public FileRequestEvaluatorTests()
    {
        File.WriteAllBytes(_path, new byte[Length]);
        File.SetLastWriteTimeUtc(_path, Modified);
        _file = FileVersion.Open(_path, contentEncoding: null);
    }

    public void Dispose()
    {
        _file.Dispose();
        File.Delete(_path);
    }

    public enum Method
    {
        Get,
        Head,
        Post,
    }

    // Header values use "{etag}" for the file's ETag.
    public static TheoryData<string, Method, string[], int, long, long> Cases() => new()
    {
        { "no conditions", Method.Get, [], 200, 0, Length },

        // 13.1.1 If-Match: strong comparison.
        { "If-Match current", Method.Get, ["If-Match", "{etag}"], 200, 0, Length },
        { "If-Match other", Method.Get, ["If-Match", "\"other\""], 412, 0, Length },
        { "If-Match any", Method.Get, ["If-Match", "*"], 200, 0, Length },
        { "If-Match list with current", Method.Get, ["If-Match", "\"a\", {etag}"], 200, 0, Length },
        { "If-Match weak current (strong comparison fails)", Method.Get, ["If-Match", "W/{etag}"], 412, 0, Length },
        { "If-Match other on HEAD", Method.Head, ["If-Match", "\"other\""], 412, 0, Length },
        { "If-Match fails before If-None-Match is looked at", Method.Get, ["If-Match", "\"other\"", "If-None-Match", "{etag}"], 412, 0, Length },
        // 5.6.1: an empty field value is an empty list, present but naming no tag (as "," is).
        { "If-Match empty fails", Method.Get, ["If-Match", ""], 412, 0, Length },
        { "If-Match empty list fails", Method.Get, ["If-Match", ","], 412, 0, Length },

        // 13.1.4 If-Unmodified-Since, only without If-Match.
        { "If-Unmodified-Since before Last-Modified", Method.Get, ["If-Unmodified-Since", "Thu, 01 Jan 2026 00:00:00 GMT"], 412, 0, Length },
        { "If-Unmodified-Since equal to Last-Modified", Method.Get, ["If-Unmodified-Since", "Fri, 02 Jan 2026 03:04:05 GMT"], 200, 0, Length },
        { "If-Unmodified-Since after Last-Modified", Method.Get, ["If-Unmodified-Since", "Sat, 03 Jan 2026 00:00:00 GMT"], 200, 0, Length },
        { "If-Unmodified-Since invalid is ignored", Method.Get, ["If-Unmodified-Since", "yesterday"], 200, 0, Length },
        { "If-Unmodified-Since ignored when If-Match is present", Method.Get, ["If-Match", "{etag}", "If-Unmodified-Since", "Thu, 01 Jan 2026 00:00:00 GMT"], 200, 0, Length },
        { "If-Unmodified-Since before Last-Modified on POST", Method.Post, ["If-Unmodified-Since", "Thu, 01 Jan 2026 00:00:00 GMT"], 412, 0, Length },

        // 13.1.2 If-None-Match: weak comparison; 304 for GET/HEAD, 412 otherwise.
        { "If-None-Match current", Method.Get, ["If-None-Match", "{etag}"], 304, 0, Length },
        { "If-None-Match current on HEAD", Method.Head, ["If-None-Match", "{etag}"], 304, 0, Length },
        { "If-None-Match weak current (weak comparison matches)", Method.Get, ["If-None-Match", "W/{etag}"], 304, 0, Length },
        { "If-None-Match any", Method.Get, ["If-None-Match", "*"], 304, 0, Length },
        { "If-None-Match list with current", Method.Get, ["If-None-Match", "\"a\", W/\"b\", {etag}"], 304, 0, Length },
        { "If-None-Match other", Method.Get, ["If-None-Match", "\"other\""], 200, 0, Length },
        { "If-None-Match current on POST", Method.Post, ["If-None-Match", "{etag}"], 412, 0, Length },
        { "If-None-Match other wins over a matching If-Modified-Since", Method.Get, ["If-None-Match", "\"other\"", "If-Modified-Since", "Fri, 02 Jan 2026 03:04:05 GMT"], 200, 0, Length },
        { "If-None-Match empty still displaces If-Modified-Since", Method.Get, ["If-None-Match", "", "If-Modified-Since", "Fri, 02 Jan 2026 03:04:05 GMT"], 200, 0, Length },
        { "If-None-Match empty list still displaces If-Modified-Since", Method.Get, ["If-None-Match", ",", "If-Modified-Since", "Fri, 02 Jan 2026 03:04:05 GMT"], 200, 0, Length },

        // 13.1.3 If-Modified-Since: GET and HEAD only; invalid or future dates are ignored.
        { "If-Modified-Since equal to Last-Modified", Method.Get, ["If-Modified-Since", "Fri, 02 Jan 2026 03:04:05 GMT"], 304, 0, Length },
        { "If-Modified-Since after Last-Modified", Method.Get, ["If-Modified-Since", "Mon, 05 Jan 2026 00:00:00 GMT"], 304, 0, Length },
        { "If-Modified-Since on HEAD", Method.Head, ["If-Modified-Since", "Mon, 05 Jan 2026 00:00:00 GMT"], 304, 0, Length },
        { "If-Modified-Since before Last-Modified", Method.Get, ["If-Modified-Since", "Fri, 02 Jan 2026 03:04:04 GMT"], 200, 0, Length },
        { "If-Modified-Since in the future is invalid", Method.Get, ["If-Modified-Since", "Tue, 01 Jan 2030 00:00:00 GMT"], 200, 0, Length },
        { "If-Modified-Since malformed", Method.Get, ["If-Modified-Since", "not a date"], 200, 0, Length },
        { "If-Modified-Since with two values", Method.Get, ["If-Modified-Since", "Mon, 05 Jan 2026 00:00:00 GMT", "If-Modified-Since", "Mon, 05 Jan 2026 00:00:00 GMT"], 200, 0, Length },
        { "If-Modified-Since ignored on POST", Method.Post, ["If-Modified-Since", "Mon, 05 Jan 2026 00:00:00 GMT"], 200, 0, Length },
        { "If-Modified-Since in the obsolete RFC 850 form", Method.Get, ["If-Modified-Since", "Friday, 02-Jan-26 03:04:05 GMT"], 304, 0, Length },

        // 14.1.2 / 14.2 Range (GET only, one range).
        { "range first bytes", Method.Get, ["Range", "bytes=0-99"], 206, 0, 100 },
        { "range middle", Method.Get, ["Range", "bytes=100-199"], 206, 100, 100 },
        { "range one byte at the end", Method.Get, ["Range", "bytes=999-999"], 206, 999, 1 },
        { "range suffix", Method.Get, ["Range", "bytes=-100"], 206, 900, 100 },
        { "range suffix longer than the file", Method.Get, ["Range", "bytes=-5000"], 206, 0, Length },
        { "range open-ended", Method.Get, ["Range", "bytes=900-"], 206, 900, 100 },
        { "range last-pos beyond the length", Method.Get, ["Range", "bytes=500-5000"], 206, 500, 500 },
        { "range unit case-insensitive", Method.Get, ["Range", "BYTES=0-0"], 206, 0, 1 },
        { "range first-pos at the length is unsatisfiable", Method.Get, ["Range", "bytes=1000-"], 416, 0, 0 },
        { "range first-pos beyond the length is unsatisfiable", Method.Get, ["Range", "bytes=5000-6000"], 416, 0, 0 },
        { "range suffix of zero is unsatisfiable", Method.Get, ["Range", "bytes=-0"], 416, 0, 0 },
        { "range multi gets the whole file", Method.Get, ["Range", "bytes=0-1,5-6"], 200, 0, Length },
        { "range two field lines get the whole file", Method.Get, ["Range", "bytes=0-1", "Range", "bytes=5-6"], 200, 0, Length },
        { "range malformed", Method.Get, ["Range", "bytes=abc"], 200, 0, Length },
        { "range last before first is invalid", Method.Get, ["Range", "bytes=5-1"], 200, 0, Length },
        { "range other unit", Method.Get, ["Range", "items=0-1"], 200, 0, Length },
        { "range on HEAD is ignored", Method.Head, ["Range", "bytes=0-99"], 200, 0, Length },

        // 13.1.5 If-Range: a strong ETag or the exact Last-Modified date.
        { "If-Range current ETag", Method.Get, ["Range", "bytes=0-99", "If-Range", "{etag}"], 206, 0, 100 },
        { "If-Range other ETag", Method.Get, ["Range", "bytes=0-99", "If-Range", "\"other\""], 200, 0, Length },
        { "If-Range weak current ETag never matches", Method.Get, ["Range", "bytes=0-99", "If-Range", "W/{etag}"], 200, 0, Length },
        { "If-Range equal date", Method.Get, ["Range", "bytes=0-99", "If-Range", "Fri, 02 Jan 2026 03:04:05 GMT"], 206, 0, 100 },
        { "If-Range other date", Method.Get, ["Range", "bytes=0-99", "If-Range", "Sat, 03 Jan 2026 03:04:05 GMT"], 200, 0, Length },
        { "If-Range malformed", Method.Get, ["Range", "bytes=0-99", "If-Range", "garbage"], 200, 0, Length },
        { "If-Range empty names no version", Method.Get, ["Range", "bytes=0-99", "If-Range", ""], 200, 0, Length },
        { "If-Range with two values", Method.Get, ["Range", "bytes=0-99", "If-Range", "{etag}", "If-Range", "{etag}"], 200, 0, Length },
        { "If-Range without Range", Method.Get, ["If-Range", "\"other\""], 200, 0, Length },
        { "If-Range other ETag with an unsatisfiable range", Method.Get, ["Range", "bytes=5000-", "If-Range", "\"other\""], 200, 0, Length },

        // Preconditions come before the range (13.2.2).
        { "If-None-Match current with a range", Method.Get, ["If-None-Match", "{etag}", "Range", "bytes=0-99"], 304, 0, Length },
        { "If-Match other with a range", Method.Get, ["If-Match", "\"other\"", "Range", "bytes=0-99"], 412, 0, Length },
        { "If-Match current with a range", Method.Get, ["If-Match", "{etag}", "Range", "bytes=0-99"], 206, 0, 100 },
    };

    [Theory]
    [MemberData(nameof(Cases))]
    public void Evaluates(string name, Method method, string[] fields, int status, long start, long count)
    {
        Assert.False(string.IsNullOrEmpty(name));
        FileRequestHeaders headers = HeadersOf(fields);
        bool isGet = method == Method.Get;
        bool isHead = method == Method.Head;

        int direct = FileRequestEvaluator.Evaluate(headers, _file, isGet, isHead, enableRanges: true, parsed: null, out long directStart, out long directCount, out _, now: Now);
        Assert.Equal((status, start, count), (direct, directStart, directCount));

        // The memo, twice (a miss, then a hit), answers the same.
        var memo = new RequestHeaderCache();
        for (int i = 0; i < 2; i++)
        {
            int memoized = FileRequestEvaluator.Evaluate(headers, _file, isGet, isHead, enableRanges: true, memo, out long memoStart, out long memoCount, out _, now: Now);
            Assert.Equal((status, start, count), (memoized, memoStart, memoCount));
        }
    }

    [Fact]
    public void Ranges_off_sends_the_whole_file()
    {
        FileRequestHeaders headers = HeadersOf(["Range", "bytes=0-99"]);
        int status = FileRequestEvaluator.Evaluate(headers, _file, isGet: true, isHead: false, enableRanges: false, parsed: null, out long start, out long count, out _, now: Now);
        Assert.Equal((200, 0L, Length), (status, start, count));
    }

    [Fact]
    public void A_date_becomes_valid_once_it_is_no_longer_in_the_future()
    {
        FileRequestHeaders headers = HeadersOf(["If-Modified-Since", "Tue, 01 Jan 2030 00:00:00 GMT"]);
        DateTimeOffset later = new(2030, 1, 1, 0, 0, 0, TimeSpan.Zero);
        Assert.Equal(200, FileRequestEvaluator.EvaluatePreconditions(headers, _file, isGetOrHead: true, parsed: null, Now));
        Assert.Equal(304, FileRequestEvaluator.EvaluatePreconditions(headers, _file, isGetOrHead: true, parsed: null, later));
    }

    [Fact]
    public void The_memo_of_If_Range_is_per_version_even_when_two_versions_share_a_tag()
    {
        // Two versions with one content-hash tag instance (the same bytes) and different modification times: a date
        // If-Range matches the first one's Last-Modified only, whatever the memo saw first.
        string otherPath = _path + ".other";
        File.WriteAllBytes(otherPath, new byte[Length]);
        File.SetLastWriteTimeUtc(otherPath, Modified.AddDays(1));
        using FileVersion other = FileVersion.Open(otherPath, contentEncoding: null);
        try
        {
            ContentHash hash = ContentHash.Of(new byte[Length]);
            _file.UseContentHash(hash);
            other.UseContentHash(hash);
            Assert.Same(_file.ETag, other.ETag);

            FileRequestHeaders headers = HeadersOf(["Range", "bytes=0-9", "If-Range", "Fri, 02 Jan 2026 03:04:05 GMT"]);
            var memo = new RequestHeaderCache();
            Assert.Equal(206, FileRequestEvaluator.Evaluate(headers, _file, isGet: true, isHead: false, enableRanges: true, memo, out _, out _, out _, now: Now));
            Assert.Equal(200, FileRequestEvaluator.Evaluate(headers, other, isGet: true, isHead: false, enableRanges: true, memo, out _, out _, out _, now: Now));
            Assert.Equal(206, FileRequestEvaluator.Evaluate(headers, _file, isGet: true, isHead: false, enableRanges: true, memo, out _, out _, out _, now: Now));
        }
        finally
        {
            File.Delete(otherPath);
        }
    }

    // A connection's memo outlives the versions it answered for: it must not keep one (and the bytes a cached version
    // holds) alive once the cache has let it go.
    [Fact]
    public void The_memo_of_If_Range_does_not_keep_its_version_alive()
    {
        var memo = new RequestHeaderCache();
        WeakReference version = AnswerIfRange(memo, _path);
        for (int i = 0; i < 3 && version.IsAlive; i++)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
        }

        Assert.False(version.IsAlive, "the memo still holds the version");
        Assert.False(memo.IsEmpty);
    }

    // Not inlined: no local of the caller may keep the version reachable.
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static WeakReference AnswerIfRange(RequestHeaderCache memo, string path)
    {
        using FileVersion opened = FileVersion.Open(path, contentEncoding: null);
        FileVersion cached = opened.ForCache(new byte[Length], null, null);
        FileRequestHeaders headers = HeadersOf(["Range", "bytes=0-9", "If-Range", cached.ETag!]);
        Assert.Equal(206, FileRequestEvaluator.Evaluate(headers, cached, isGet: true, isHead: false, enableRanges: true, memo, out _, out _, out _, now: Now));
        return new WeakReference(cached);
    }

    private static FileRequestHeaders HeadersOf(string[] fields)
    {
        var values = new Dictionary<string, StringValues>(StringComparer.OrdinalIgnoreCase);
        for (int i = 0; i < fields.Length; i += 2)
        {
            string value = fields[i + 1].Replace("{etag}", ETag, StringComparison.Ordinal);
            values[fields[i]] = values.TryGetValue(fields[i], out StringValues existing) ? StringValues.Concat(existing, value) : new StringValues(value);
        }

        StringValues Get(string name) => values.TryGetValue(name, out StringValues v) ? v : StringValues.Empty;
        return new FileRequestHeaders
        {
            IfMatch = Get("If-Match"),
            IfNoneMatch = Get("If-None-Match"),
            IfModifiedSince = Get("If-Modified-Since"),
            IfUnmodifiedSince = Get("If-Unmodified-Since"),
            IfRange = Get("If-Range"),
            Range = Get("Range"),
        };
    }
}
