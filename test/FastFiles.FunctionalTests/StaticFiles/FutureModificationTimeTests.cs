using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Primitives;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// A file dated in the future with no change time to stand in for it (a provider's file, opened afresh for every
/// response): its Last-Modified is never later than Date (RFC 9110 8.8.2.1) and the same in every response, so date
/// conditions on an unchanged file hold (a date that moved would turn If-Unmodified-Since into a 412).
/// </summary>
public sealed class FutureModificationTimeTests(FutureModificationTimeTests.Fixture fixture) : IClassFixture<FutureModificationTimeTests.Fixture>
{
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        protected override Task<TestHost> StartHostAsync() => TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new OneFileProvider("y2300.txt", "dated 2300"u8.ToArray(), new DateTimeOffset(2300, 1, 1, 0, 0, 0, TimeSpan.Zero)),
        }));
    }

    [Theory]
    [Transports]
    public async Task Every_response_sends_one_date_no_later_than_Date_and_conditions_hold(Transport transport)
    {
        using HttpResponseMessage first = await _f.Host.SendAsync(transport, "/y2300.txt");
        Assert.Equal(HttpStatusCode.OK, first.StatusCode);
        string lastModified = first.Header("Last-Modified")!;
        Assert.True(first.Content.Headers.LastModified <= first.Headers.Date, $"Last-Modified {lastModified} is after Date {first.Header("Date")}");

        // A second later: a date taken from the clock per response would have moved on.
        await Task.Delay(1100);
        using HttpResponseMessage second = await _f.Host.SendAsync(transport, "/y2300.txt");
        Assert.Equal(lastModified, second.Header("Last-Modified"));

        Assert.Equal(HttpStatusCode.NotModified, await StatusAsync(transport, ("If-Modified-Since", lastModified)));
        Assert.Equal(HttpStatusCode.OK, await StatusAsync(transport, ("If-Unmodified-Since", lastModified)));
        Assert.Equal(HttpStatusCode.PartialContent, await StatusAsync(transport, ("Range", "bytes=0-1"), ("If-Range", lastModified)));
    }

    private async Task<HttpStatusCode> StatusAsync(Transport transport, params (string Name, string Value)[] fields)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/y2300.txt", m =>
        {
            foreach ((string name, string value) in fields)
            {
                m.Headers.TryAddWithoutValidation(name, value);
            }
        });
        return response.StatusCode;
    }

    // A provider without physical paths: its files have no change time.
    private sealed class OneFileProvider(string name, byte[] bytes, DateTimeOffset modified) : IFileProvider
    {
        public IFileInfo GetFileInfo(string subpath)
            => subpath.TrimStart('/') == name ? new OneFile(name, bytes, modified) : new NotFoundFileInfo(subpath);

        public IDirectoryContents GetDirectoryContents(string subpath) => NotFoundDirectoryContents.Singleton;

        public IChangeToken Watch(string filter) => NullChangeToken.Singleton;
    }

    private sealed class OneFile(string name, byte[] bytes, DateTimeOffset modified) : IFileInfo
    {
        public bool Exists => true;

        public long Length => bytes.Length;

        public string? PhysicalPath => null;

        public string Name => name;

        public DateTimeOffset LastModified => modified;

        public bool IsDirectory => false;

        public Stream CreateReadStream() => new MemoryStream(bytes, writable: false);
    }
}
