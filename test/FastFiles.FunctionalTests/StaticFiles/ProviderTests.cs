using System.Globalization;
using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Primitives;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>Files from providers without physical paths (the stream copy), and options from the container with the web root.</summary>
public sealed class ProviderTests(ProviderTests.Fixture fixture) : IClassFixture<ProviderTests.Fixture>
{
    private const int Length = 300_000;
    private static readonly DateTimeOffset Modified = new(2023, 5, 6, 7, 8, 9, TimeSpan.Zero);
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public byte[] Content { get; } = RandomBytes(Length);

        protected override async Task<TestHost> StartHostAsync()
        {
            Files.Write("www/site.css", Encoding.ASCII.GetBytes("body{}"));
            var provider = new MemoryProvider(new Dictionary<string, byte[]>
            {
                ["/seekable.bin"] = Content,
                ["/stream.bin"] = Content,
                ["/sub/index.html"] = Encoding.ASCII.GetBytes("memory index"),
            });
            return await TestHost.StartAsync(
                app =>
                {
                    app.UseFastFiles(new FastStaticFileOptions
                    {
                        RequestPath = "/mem",
                        FileProvider = provider,
                        ServeUnknownFileTypes = true,
                        DefaultFileNames = ["index.html"],
                    });
                    app.UseFastFiles();
                },
                services => services.AddFastFiles().ConfigureFastStaticFiles(o => o.CacheControl = "no-cache"),
                contentRoot: Files.Root,
                webRoot: Files.PathOf("www"));
        }

        private static byte[] RandomBytes(int length)
        {
            var bytes = new byte[length];
            new Random(42).NextBytes(bytes);
            return bytes;
        }
    }

    [Theory]
    [InlineData(Transport.Http11, "/mem/seekable.bin")]
    [InlineData(Transport.Http11, "/mem/stream.bin")]
    [InlineData(Transport.H2c, "/mem/stream.bin")]
    public async Task Whole_file_and_ranges_from_a_stream(Transport transport, string path)
    {
        using HttpResponseMessage whole = await _f.Host.SendAsync(transport, path);
        Assert.Equal(HttpStatusCode.OK, whole.StatusCode);
        Assert.Equal(_f.Content, await whole.Content.ReadAsByteArrayAsync());
        Assert.Equal(ResponseHeaders.HttpDate(Modified), whole.Header("Last-Modified"));
        string etag = whole.Header("ETag")!;

        foreach ((string range, int start, int count) in new[] { ("bytes=0-0", 0, 1), ("bytes=200000-", 200000, Length - 200000), ("bytes=-5", Length - 5, 5), ("bytes=70000-170000", 70000, 100001) })
        {
            using HttpResponseMessage partial = await _f.Host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("Range", range));
            Assert.Equal(HttpStatusCode.PartialContent, partial.StatusCode);
            Assert.Equal(string.Create(CultureInfo.InvariantCulture, $"bytes {start}-{start + count - 1}/{Length}"), partial.Header("Content-Range"));
            Assert.Equal(_f.Content.AsSpan(start, count).ToArray(), await partial.Content.ReadAsByteArrayAsync());
        }

        using HttpResponseMessage notModified = await _f.Host.SendAsync(transport, path, r => r.Headers.TryAddWithoutValidation("If-None-Match", etag));
        Assert.Equal(HttpStatusCode.NotModified, notModified.StatusCode);
    }

    [Fact]
    public async Task Default_file_from_a_provider()
    {
        using HttpResponseMessage redirect = await _f.Host.SendAsync(Transport.Http11, "/mem/sub");
        Assert.Equal(HttpStatusCode.MovedPermanently, redirect.StatusCode);
        Assert.Equal("/mem/sub/", redirect.Header("Location"));
        using HttpResponseMessage index = await _f.Host.SendAsync(Transport.Http11, "/mem/sub/");
        Assert.Equal("memory index", await index.Content.ReadAsStringAsync());
    }

    [Fact]
    public async Task Missing_file_from_a_provider_is_404()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/mem/nothing.bin");
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
    }

    [Fact]
    public async Task Parameterless_use_fast_files_serves_the_web_root_with_container_options()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/site.css");
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("body{}", await response.Content.ReadAsStringAsync());
        Assert.Equal("no-cache", response.Header("Cache-Control"));
        Assert.Equal("text/css", response.Content.Headers.ContentType?.MediaType);
    }

    /// <summary>Files that exist only in memory; "stream.bin" is readable only forwards.</summary>
    private sealed class MemoryProvider(Dictionary<string, byte[]> files) : IFileProvider
    {
        public IFileInfo GetFileInfo(string subpath)
            => files.TryGetValue(subpath, out byte[]? bytes)
                ? new MemoryFile(Path.GetFileName(subpath), bytes, Seekable: !subpath.Contains("stream", StringComparison.Ordinal))
                : new NotFoundFileInfo(subpath);

        public IDirectoryContents GetDirectoryContents(string subpath)
        {
            string prefix = subpath.TrimEnd('/') + "/";
            IFileInfo[] entries = files.Keys.Where(k => k.StartsWith(prefix, StringComparison.Ordinal)).Select(GetFileInfo).ToArray();
            return entries.Length == 0 ? NotFoundDirectoryContents.Singleton : new Contents(entries);
        }

        public IChangeToken Watch(string filter) => NullChangeToken.Singleton;

        private sealed class Contents(IFileInfo[] entries) : IDirectoryContents
        {
            public bool Exists => true;

            public IEnumerator<IFileInfo> GetEnumerator() => ((IEnumerable<IFileInfo>)entries).GetEnumerator();

            System.Collections.IEnumerator System.Collections.IEnumerable.GetEnumerator() => GetEnumerator();
        }
    }

    private sealed record MemoryFile(string Name, byte[] Bytes, bool Seekable) : IFileInfo
    {
        public bool Exists => true;

        public long Length => Bytes.Length;

        public string? PhysicalPath => null;

        public DateTimeOffset LastModified => Modified;

        public bool IsDirectory => false;

        public Stream CreateReadStream() => Seekable ? new MemoryStream(Bytes, writable: false) : new ForwardOnlyStream(Bytes);
    }

    private sealed class ForwardOnlyStream(byte[] bytes) : Stream
    {
        private readonly MemoryStream _inner = new(bytes, writable: false);

        public override bool CanRead => true;

        public override bool CanSeek => false;

        public override bool CanWrite => false;

        public override long Length => throw new NotSupportedException();

        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

        public override void Flush()
        {
        }

        // Short reads, as a network or decompressing stream would give.
        public override int Read(byte[] buffer, int offset, int count) => _inner.Read(buffer, offset, Math.Min(count, 1000));

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();

        public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
    }
}
