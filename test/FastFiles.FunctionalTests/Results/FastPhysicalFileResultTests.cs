using System.Globalization;
using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.FunctionalTests.Results;

/// <summary><c>FastResults.PhysicalFile</c> as a minimal-API result and as an MVC action result.</summary>
public sealed class FastPhysicalFileResultTests(FastPhysicalFileResultTests.Fixture fixture) : IClassFixture<FastPhysicalFileResultTests.Fixture>
{
    private const int Length = 20_000;
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public byte[] Content { get; private set; } = [];

        protected override async Task<TestHost> StartHostAsync()
        {
            Content = Files.Create("report.pdf", Length);
            Directory.CreateDirectory(Files.PathOf("folder"));
            string root = Files.Root;
            return await TestHost.StartAsync(
                app =>
                {
                    app.MapGet("/min/{name}", (string name, string? download, string? type, bool? ranges) =>
                        FastResults.PhysicalFile(Path.Combine(root, name), type, download, ranges ?? true));
                    app.MapMethods("/min-head/{name}", ["HEAD"], (string name) => FastResults.PhysicalFile(Path.Combine(root, name)));
                    app.MapPost("/min-post/{name}", (string name) => FastResults.PhysicalFile(Path.Combine(root, name)));
                    app.MapControllers();
                },
                services =>
                {
                    services.AddSingleton(new ControllerFileRoot(root));
                    services.AddControllers().AddApplicationPart(typeof(FilesController).Assembly);
                });
        }
    }

    public static TheoryData<Transport, string> Endpoints()
    {
        var data = new TheoryData<Transport, string>();
        foreach (Transport t in TransportMatrix.Default)
        {
            data.Add(t, "/min/report.pdf");
            data.Add(t, "/mvc/fast/report.pdf");
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Endpoints))]
    public async Task Get_sends_the_file_with_validators(Transport transport, string path)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, path);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(_f.Content, await response.Content.ReadAsByteArrayAsync());
        Assert.Equal("application/pdf", response.Content.Headers.ContentType?.MediaType);
        Assert.Equal("bytes", response.Header("Accept-Ranges"));
        Assert.NotNull(response.Headers.ETag);
        Assert.False(response.Headers.ETag!.IsWeak);
        Assert.NotNull(response.Content.Headers.LastModified);
        Assert.Null(response.Header("Content-Disposition"));
    }

    [Theory]
    [MemberData(nameof(Endpoints))]
    public async Task Ranges(Transport transport, string path)
    {
        using HttpResponseMessage partial = await _f.Host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("Range", "bytes=100-199"));
        Assert.Equal(HttpStatusCode.PartialContent, partial.StatusCode);
        Assert.Equal(string.Create(CultureInfo.InvariantCulture, $"bytes 100-199/{Length}"), partial.Header("Content-Range"));
        Assert.Equal(_f.Content.AsSpan(100, 100).ToArray(), await partial.Content.ReadAsByteArrayAsync());

        using HttpResponseMessage suffix = await _f.Host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("Range", "bytes=-10"));
        Assert.Equal(_f.Content.AsSpan(Length - 10).ToArray(), await suffix.Content.ReadAsByteArrayAsync());

        using HttpResponseMessage unsatisfiable = await _f.Host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("Range", "bytes=20000-"));
        Assert.Equal(HttpStatusCode.RequestedRangeNotSatisfiable, unsatisfiable.StatusCode);
        Assert.Equal(string.Create(CultureInfo.InvariantCulture, $"bytes */{Length}"), unsatisfiable.Header("Content-Range"));

        // Several ranges: the results share the middleware's multipart/byteranges answer (MultiRangeTests covers it in depth).
        using HttpResponseMessage multi = await _f.Host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("Range", "bytes=0-1,3-4"));
        Assert.Equal(HttpStatusCode.PartialContent, multi.StatusCode);
        string boundary = multi.Content.Headers.ContentType!.Parameters.Single(p => p.Name == "boundary").Value!;
        List<MultipartPart> parts = await MultipartPart.ReadAsync(boundary, await multi.Content.ReadAsStreamAsync());
        Assert.Equal([_f.Content[..2], _f.Content[3..5]], parts.Select(p => p.Body));
    }

    [Fact]
    public async Task Range_processing_can_be_turned_off()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/min/report.pdf?ranges=false", r => r.Headers.TryAddWithoutValidation("Range", "bytes=0-9"));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Null(response.Header("Accept-Ranges"));
        Assert.Null(response.Header("Content-Range"));
        Assert.Equal(_f.Content, await response.Content.ReadAsByteArrayAsync());
    }

    [Theory]
    [MemberData(nameof(Endpoints))]
    public async Task Conditionals(Transport transport, string path)
    {
        using HttpResponseMessage first = await _f.Host.SendAsync(transport, path);
        string etag = first.Header("ETag")!;
        string lastModified = first.Header("Last-Modified")!;

        await AssertStatusAsync(HttpStatusCode.NotModified, ("If-None-Match", etag));
        await AssertStatusAsync(HttpStatusCode.NotModified, ("If-None-Match", "W/" + etag));
        await AssertStatusAsync(HttpStatusCode.OK, ("If-None-Match", "\"other\""));
        await AssertStatusAsync(HttpStatusCode.NotModified, ("If-Modified-Since", lastModified));
        await AssertStatusAsync(HttpStatusCode.OK, ("If-Match", etag));
        await AssertStatusAsync(HttpStatusCode.PreconditionFailed, ("If-Match", "\"other\""));
        await AssertStatusAsync(HttpStatusCode.PreconditionFailed, ("If-Unmodified-Since", "Sat, 01 Jan 2000 00:00:00 GMT"));
        await AssertStatusAsync(HttpStatusCode.PartialContent, ("Range", "bytes=0-0"), ("If-Range", etag));
        await AssertStatusAsync(HttpStatusCode.OK, ("Range", "bytes=0-0"), ("If-Range", "\"other\""));
        await AssertStatusAsync(HttpStatusCode.PartialContent, ("Range", "bytes=0-0"), ("If-Range", lastModified));

        async Task AssertStatusAsync(HttpStatusCode expected, params (string Name, string Value)[] headers)
        {
            using HttpResponseMessage response = await _f.Host.SendAsync(transport, path, r =>
            {
                foreach ((string name, string value) in headers)
                {
                    r.Headers.TryAddWithoutValidation(name, value);
                }
            });
            Assert.Equal(expected, response.StatusCode);
            byte[] body = await response.Content.ReadAsByteArrayAsync();
            Assert.Equal(expected switch { HttpStatusCode.OK => Length, HttpStatusCode.PartialContent => 1, _ => 0 }, body.Length);
        }
    }

    [Theory]
    [InlineData("/min/report.pdf?download=annual%20report.pdf")]
    [InlineData("/mvc/fast/report.pdf?download=annual%20report.pdf")]
    public async Task Download_name_sets_content_disposition(string path)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, path);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("attachment", response.Content.Headers.ContentDisposition?.DispositionType);
        Assert.Equal("annual report.pdf", response.Content.Headers.ContentDisposition?.FileName?.Trim('"'));
        Assert.Equal(_f.Content, await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Non_ascii_download_name_uses_filename_star()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/min/report.pdf?download=r%C3%A9sum%C3%A9.pdf");
        Assert.Equal("résumé.pdf", response.Content.Headers.ContentDisposition?.FileNameStar);
    }

    [Fact]
    public async Task Explicit_content_type_wins()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/min/report.pdf?type=application/x-custom");
        Assert.Equal("application/x-custom", response.Content.Headers.ContentType?.MediaType);
    }

    [Theory]
    [InlineData("/min/missing.pdf")]
    [InlineData("/mvc/fast/missing.pdf")]
    [InlineData("/min/folder")]
    public async Task Missing_file_is_404(string path)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, path);
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
    }

    [Theory]
    [InlineData("/min-head/report.pdf")]
    [InlineData("/mvc/fast/report.pdf")]
    public async Task Head_has_headers_and_no_body(string path)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.H2c, path, method: HttpMethod.Head);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(Length, response.Content.Headers.ContentLength);
        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Post_gets_the_file_but_a_matching_if_none_match_is_412()
    {
        using HttpResponseMessage first = await _f.Host.SendAsync(Transport.Http11, "/min/report.pdf");
        using HttpResponseMessage post = await _f.Host.SendAsync(Transport.Http11, "/min-post/report.pdf", method: HttpMethod.Post);
        Assert.Equal(HttpStatusCode.OK, post.StatusCode);
        Assert.Equal(_f.Content, await post.Content.ReadAsByteArrayAsync());

        // RFC 9110 13.1.2: for methods other than GET/HEAD a matching If-None-Match is 412, not 304.
        using HttpResponseMessage conditional = await _f.Host.SendAsync(Transport.Http11, "/min-post/report.pdf", r => r.Headers.TryAddWithoutValidation("If-None-Match", first.Header("ETag")), HttpMethod.Post);
        Assert.Equal(HttpStatusCode.PreconditionFailed, conditional.StatusCode);
    }

    [Fact]
    public void Relative_paths_are_rejected()
        => Assert.Throws<ArgumentException>(() => FastResults.PhysicalFile("relative/report.pdf"));
}
