using FastFiles.Files;
using FastFiles.Http;
using Microsoft.Extensions.Primitives;

namespace FastFiles.Tests.Http;

/// <summary>The response plan: status, header values and body source for one version, with no HttpContext.</summary>
public sealed class FileResponsePlanTests : IDisposable
{
    private const long Length = 1000;
    private static readonly DateTime Modified = new(2026, 1, 2, 3, 4, 5, DateTimeKind.Utc);
    private readonly string _path = Path.Combine(Path.GetTempPath(), $"plan-{Guid.NewGuid():N}.bin");
    private readonly FileVersion _file;

    private readonly FileResponseSettings _settings = new()
    {
        ContentType = "text/css",
        CacheControl = "public, max-age=60",
        VaryAcceptEncoding = true,
        EnableRangeProcessing = true,
        LogName = "/a.css",
    };

    public FileResponsePlanTests()
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

    [Fact]
    public void Full_get_carries_every_header_and_the_file_as_body()
    {
        FileResponsePlan plan = FileResponsePlan.Create(Request(), _file, _settings, reuseStrings: true);
        Assert.Equal(200, plan.StatusCode);
        Assert.Same(_file.ETag, plan.ETag);
        Assert.Same(_file.LastModifiedHeader, plan.LastModified);
        Assert.Equal(("public, max-age=60", "Accept-Encoding", "text/css", "bytes"), (plan.CacheControl, plan.Vary, plan.ContentType, plan.AcceptRanges));
        Assert.Null(plan.ContentRange);
        Assert.Null(plan.ContentEncoding);
        Assert.Equal((ResponseBody.FileHandle, 0L, Length, (long?)Length), (plan.Body, plan.Start, plan.Count, plan.ContentLength));
    }

    [Fact]
    public void Without_string_reuse_validators_are_equal_but_fresh()
    {
        FileResponsePlan plan = FileResponsePlan.Create(Request(), _file, _settings, reuseStrings: false);
        Assert.Equal(_file.ETag, plan.ETag);
        Assert.NotSame(_file.ETag, plan.ETag);
        Assert.Equal(_file.LastModifiedHeader, plan.LastModified);
        Assert.NotSame(_file.LastModifiedHeader, plan.LastModified);
    }

    [Fact]
    public void Range_is_206_with_content_range_and_a_body_slice()
    {
        FileResponsePlan plan = FileResponsePlan.Create(Request(range: "bytes=10-19"), _file, _settings, reuseStrings: true);
        Assert.Equal((206, "bytes 10-19/1000"), (plan.StatusCode, plan.ContentRange));
        Assert.Equal((ResponseBody.FileHandle, 10L, 10L), (plan.Body, plan.Start, plan.Count));
    }

    [Fact]
    public void Not_modified_carries_validators_and_caching_fields_only()
    {
        FileResponsePlan plan = FileResponsePlan.Create(Request(ifNoneMatch: _file.ETag), _file, _settings, reuseStrings: true);
        Assert.Equal(304, plan.StatusCode);
        Assert.NotNull(plan.ETag);
        Assert.NotNull(plan.LastModified);
        Assert.Equal(("public, max-age=60", "Accept-Encoding"), (plan.CacheControl, plan.Vary));
        Assert.Equal((ResponseBody.None, (string?)null, (string?)null, (long?)null), (plan.Body, plan.ContentType, plan.AcceptRanges, plan.ContentLength));
    }

    [Fact]
    public void Prebuilt_plans_are_the_ones_a_request_gets()
    {
        // The static lane renders its bytes from these two; the middleware applies Create's. They must not drift apart.
        FileResponsePlan representation = FileResponsePlan.Representation(_file, _settings);
        FileResponsePlan get = FileResponsePlan.Create(Request(), _file, _settings, reuseStrings: true);
        Assert.Equal(get, representation);

        FileResponsePlan notModified = FileResponsePlan.Create(Request(ifNoneMatch: _file.ETag), _file, _settings, reuseStrings: true);
        Assert.Equal(notModified, representation.AsNotModified());
        Assert.Equal(notModified, FileResponsePlan.NotModified(_file, _settings));
    }

    [Fact]
    public void Unsatisfiable_range_says_the_length_and_nothing_else()
    {
        FileResponsePlan plan = FileResponsePlan.Create(Request(range: "bytes=5000-"), _file, _settings, reuseStrings: true);
        Assert.Equal((416, "bytes */1000"), (plan.StatusCode, plan.ContentRange));
        Assert.Equal((ResponseBody.None, (string?)null, (long?)null), (plan.Body, plan.ETag, plan.ContentLength));
    }

    [Fact]
    public void Failed_precondition_has_no_headers()
    {
        FileResponsePlan plan = FileResponsePlan.Create(Request(ifMatch: "\"other\""), _file, _settings, reuseStrings: true);
        Assert.Equal(412, plan.StatusCode);
        Assert.Equal((ResponseBody.None, (string?)null, (string?)null, (long?)null), (plan.Body, plan.ETag, plan.ContentType, plan.ContentLength));
    }

    [Fact]
    public void Head_has_the_length_but_no_body()
    {
        FileResponsePlan plan = FileResponsePlan.Create(Request(head: true), _file, _settings, reuseStrings: true);
        Assert.Equal((200, ResponseBody.None, (long?)Length, 0L), (plan.StatusCode, plan.Body, plan.ContentLength, plan.Count));
    }

    [Fact]
    public void Cached_bytes_are_the_body_source_of_a_cached_version()
    {
        FileVersion cached = _file.ForCache(new byte[Length]);
        FileResponsePlan plan = FileResponsePlan.Create(Request(), cached, _settings with { ContentDisposition = "attachment" }, reuseStrings: true);
        Assert.Equal((ResponseBody.CachedBytes, "attachment"), (plan.Body, plan.ContentDisposition));
    }

    private static FileRequest Request(string? range = null, string? ifNoneMatch = null, string? ifMatch = null, bool head = false)
        => new(
            new FileRequestHeaders
            {
                Range = range is null ? StringValues.Empty : new StringValues(range),
                IfNoneMatch = ifNoneMatch is null ? StringValues.Empty : new StringValues(ifNoneMatch),
                IfMatch = ifMatch is null ? StringValues.Empty : new StringValues(ifMatch),
            },
            isGet: !head,
            isHead: head,
            memo: null);
}
