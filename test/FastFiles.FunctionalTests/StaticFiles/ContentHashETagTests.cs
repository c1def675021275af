using System.Buffers.Text;
using System.IO.Compression;
using System.Net;
using System.Net.Http.Headers;
using System.Security.Cryptography;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// <see cref="FastStaticFileOptions.EnableContentHashETags"/>: the ETag is the hash of the bytes, the same on every
/// server, computed once per version, and never compared against anything but the real tag.
/// </summary>
public sealed class ContentHashETagTests : IAsyncLifetime
{
    private const int Large = 1024 * 1024;
    private static readonly TimeSpan Eventually = TimeSpan.FromSeconds(10);
    private readonly TestFiles _files = new();
    private readonly List<TestHost> _hosts = [];

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        foreach (TestHost host in _hosts)
        {
            await host.DisposeAsync();
        }

        await ResponseHeaders.AssertNoOpenFilesUnderAsync(_files.Root);
        _files.Dispose();
    }

    /// <summary>What any tool computes from the bytes alone: SHA-256, first 16 bytes, base64url, quoted.</summary>
    private static string ExpectedTag(byte[] bytes) => "\"" + Base64Url.EncodeToString(SHA256.HashData(bytes).AsSpan(0, 16)) + "\"";

    private async Task<TestHost> StartAsync(string root, bool fileCache = true)
    {
        TestHost host = await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions
            {
                FileProvider = new PhysicalFileProvider(root),
                ServeUnknownFileTypes = true,
                EnableContentHashETags = true,
            }),
            services => services.AddFastFiles(o => o.EnableFileCache = fileCache));
        _hosts.Add(host);
        return host;
    }

    [Theory]
    [Transports]
    public async Task A_small_file_has_its_hash_tag_at_once_and_revalidates_with_it(Transport transport)
    {
        byte[] content = _files.Create("small.bin", 4096);
        TestHost host = await StartAsync(_files.Root);
        using HttpResponseMessage response = await host.SendAsync(transport, "/small.bin");
        Assert.Equal(ExpectedTag(content), response.Headers.ETag?.Tag);
        Assert.False(response.Headers.ETag!.IsWeak);

        using HttpResponseMessage revalidated = await host.SendAsync(transport, "/small.bin", r => r.Headers.IfNoneMatch.Add(new EntityTagHeaderValue(ExpectedTag(content))));
        Assert.Equal(HttpStatusCode.NotModified, revalidated.StatusCode);
        Assert.Equal(ExpectedTag(content), revalidated.Headers.ETag?.Tag);
    }

    [Theory]
    [Transports]
    public async Task A_large_file_conditional_request_waits_for_the_hash_on_first_contact(Transport transport)
    {
        byte[] content = _files.Create("large.bin", Large);
        TestHost host = await StartAsync(_files.Root);
        string tag = ExpectedTag(content);

        // The very first request already holds the tag (from another server of the farm): it must match.
        using HttpResponseMessage notModified = await host.SendAsync(transport, "/large.bin", r => r.Headers.IfNoneMatch.Add(new EntityTagHeaderValue(tag)));
        Assert.Equal(HttpStatusCode.NotModified, notModified.StatusCode);
        Assert.Equal(tag, notModified.Headers.ETag?.Tag);

        using HttpResponseMessage partial = await host.SendAsync(transport, "/large.bin", r =>
        {
            r.Headers.Range = new RangeHeaderValue(1000, 1999);
            r.Headers.IfRange = new RangeConditionHeaderValue(tag);
        });
        Assert.Equal(HttpStatusCode.PartialContent, partial.StatusCode);
        Assert.Equal(content.AsSpan(1000, 1000).ToArray(), await partial.Content.ReadAsByteArrayAsync());

        using HttpResponseMessage failed = await host.SendAsync(transport, "/large.bin", r => r.Headers.IfMatch.Add(new EntityTagHeaderValue("\"not-this-one\"")));
        Assert.Equal(HttpStatusCode.PreconditionFailed, failed.StatusCode);
    }

    [Fact]
    public async Task A_large_file_is_served_without_a_tag_until_its_hash_is_known_and_then_always_with_it()
    {
        byte[] content = _files.Create("large.bin", Large);
        TestHost host = await StartAsync(_files.Root);
        string tag = ExpectedTag(content);
        DateTime deadline = DateTime.UtcNow + Eventually;
        string? seen;
        do
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/large.bin");
            Assert.Equal(content, await response.Content.ReadAsByteArrayAsync());
            seen = response.Headers.ETag?.Tag;
            // No tag, or the real one: never a stand-in that would change later.
            Assert.True(seen is null || seen == tag, seen);
        }
        while (seen is null && DateTime.UtcNow < deadline);

        Assert.Equal(tag, seen);
        for (int i = 0; i < 3; i++)
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.H2Tls, "/large.bin");
            Assert.Equal(tag, response.Headers.ETag?.Tag);
        }
    }

    [Fact]
    public async Task Two_servers_with_the_same_bytes_and_different_modification_times_send_the_same_tag()
    {
        byte[] content = _files.Create("a/app.js", 3000);
        _files.Write("b/app.js", content);
        _files.Write("a/big.bin", _files.Create("b/big.bin", Large));
        File.SetLastWriteTimeUtc(_files.PathOf("a/app.js"), new DateTime(2020, 1, 1, 0, 0, 0, DateTimeKind.Utc));
        File.SetLastWriteTimeUtc(_files.PathOf("a/big.bin"), new DateTime(2020, 1, 1, 0, 0, 0, DateTimeKind.Utc));
        TestHost first = await StartAsync(_files.PathOf("a"));
        TestHost second = await StartAsync(_files.PathOf("b"));

        using HttpResponseMessage fromFirst = await first.SendAsync(Transport.Http11, "/app.js");
        using HttpResponseMessage fromSecond = await second.SendAsync(Transport.Http11, "/app.js");
        Assert.NotEqual(fromFirst.Content.Headers.LastModified, fromSecond.Content.Headers.LastModified);
        Assert.Equal(fromFirst.Headers.ETag?.Tag, fromSecond.Headers.ETag?.Tag);

        // A tag learned from one server revalidates a large file on the other.
        string? learned = await EventualTagAsync(first, "/big.bin");
        Assert.NotNull(learned);
        using HttpResponseMessage revalidated = await second.SendAsync(Transport.H2c, "/big.bin", r => r.Headers.IfNoneMatch.Add(new EntityTagHeaderValue(learned)));
        Assert.Equal(HttpStatusCode.NotModified, revalidated.StatusCode);
    }

    [Fact]
    public async Task New_bytes_with_a_restored_modification_time_get_a_new_tag_and_a_touch_keeps_it()
    {
        byte[] v1 = _files.Create("doc.txt", 5000, seed: 1);
        DateTime modified = File.GetLastWriteTimeUtc(_files.PathOf("doc.txt"));
        TestHost host = await StartAsync(_files.Root);
        Assert.Equal(ExpectedTag(v1), (await GetAsync(host, "/doc.txt")).Tag);

        // Same length, new bytes, the old modification time put back (cp -p, some deploy tools).
        byte[] v2 = _files.Create("doc.txt", 5000, seed: 2);
        File.SetLastWriteTimeUtc(_files.PathOf("doc.txt"), modified);
        var changed = await EventuallyAsync(host, "/doc.txt", r => r.Body.SequenceEqual(v2));
        Assert.Equal(ExpectedTag(v2), changed.Tag);

        // Only the modification time changes: a new version for the cache, the same tag for clients.
        File.SetLastWriteTimeUtc(_files.PathOf("doc.txt"), modified.AddHours(1));
        var touched = await EventuallyAsync(host, "/doc.txt", r => r.LastModified > modified);
        Assert.Equal(ExpectedTag(v2), touched.Tag);
    }

    [Fact]
    public async Task Each_precompressed_variant_has_the_tag_of_its_own_bytes()
    {
        byte[] js = Encoding.UTF8.GetBytes(string.Concat(Enumerable.Range(0, 2000).Select(i => $"var v{i} = {i};\n")));
        var compressed = new MemoryStream();
        using (var brotli = new BrotliStream(compressed, CompressionLevel.Optimal, leaveOpen: true))
        {
            brotli.Write(js);
        }

        _files.Write("site/app.js", js);
        _files.Write("site/app.js.br", compressed.ToArray());
        TestHost host = await StartAsync(_files.PathOf("site"));
        using HttpResponseMessage identity = await host.SendAsync(Transport.H2Tls, "/app.js");
        using HttpResponseMessage br = await host.SendAsync(Transport.H2Tls, "/app.js", r => r.Headers.AcceptEncoding.ParseAdd("br"));
        Assert.Equal("br", br.Content.Headers.ContentEncoding.Single());
        Assert.Equal(ExpectedTag(js), identity.Headers.ETag?.Tag);
        Assert.Equal(ExpectedTag(compressed.ToArray()), br.Headers.ETag?.Tag);
    }

    [Fact]
    public async Task Without_the_file_cache_tags_are_the_same_and_computed_only_when_a_condition_needs_them()
    {
        byte[] content = _files.Create("small.bin", 4096);
        TestHost host = await StartAsync(_files.Root, fileCache: false);
        using HttpResponseMessage plain = await host.SendAsync(Transport.Http11, "/small.bin");
        Assert.Equal(content, await plain.Content.ReadAsByteArrayAsync());
        Assert.Null(plain.Headers.ETag);

        using HttpResponseMessage revalidated = await host.SendAsync(Transport.Http11, "/small.bin", r => r.Headers.IfNoneMatch.Add(new EntityTagHeaderValue(ExpectedTag(content))));
        Assert.Equal(HttpStatusCode.NotModified, revalidated.StatusCode);
        Assert.Equal(ExpectedTag(content), revalidated.Headers.ETag?.Tag);
    }

    [Fact]
    public async Task Without_the_file_cache_a_version_is_hashed_once_for_every_request_and_new_bytes_get_a_new_tag()
    {
        byte[] v1 = _files.Create("doc.bin", 200_000, seed: 1);
        DateTime modified = File.GetLastWriteTimeUtc(_files.PathOf("doc.bin"));
        TestHost host = await StartAsync(_files.Root, fileCache: false);
        Assert.Null((await GetAsync(host, "/doc.bin")).Tag);

        // A condition needs the tag: the request waits for the hash and is answered with it.
        using (HttpResponseMessage other = await host.SendAsync(Transport.Http11, "/doc.bin", r => r.Headers.IfNoneMatch.Add(new EntityTagHeaderValue("\"x\""))))
        {
            Assert.Equal(HttpStatusCode.OK, other.StatusCode);
            Assert.Equal(ExpectedTag(v1), other.Headers.ETag?.Tag);
        }

        // Known from then on, with nothing read again: every response carries it, as with the cache.
        Assert.Equal(ExpectedTag(v1), (await GetAsync(host, "/doc.bin")).Tag);
        using (HttpResponseMessage same = await host.SendAsync(Transport.H2c, "/doc.bin", r => r.Headers.IfNoneMatch.Add(new EntityTagHeaderValue(ExpectedTag(v1)))))
        {
            Assert.Equal(HttpStatusCode.NotModified, same.StatusCode);
        }

        // Same length, new bytes, the old modification time put back: the old tag no longer matches.
        byte[] v2 = _files.Create("doc.bin", 200_000, seed: 2);
        File.SetLastWriteTimeUtc(_files.PathOf("doc.bin"), modified);
        using (HttpResponseMessage changed = await host.SendAsync(Transport.Http11, "/doc.bin", r => r.Headers.IfNoneMatch.Add(new EntityTagHeaderValue(ExpectedTag(v1)))))
        {
            Assert.Equal(HttpStatusCode.OK, changed.StatusCode);
            Assert.Equal(v2, await changed.Content.ReadAsByteArrayAsync());
            Assert.Equal(ExpectedTag(v2), changed.Headers.ETag?.Tag);
        }

        Assert.Equal(ExpectedTag(v2), (await GetAsync(host, "/doc.bin")).Tag);
    }

    private static async Task<string?> EventualTagAsync(TestHost host, string path)
    {
        var result = await EventuallyAsync(host, path, r => r.Tag is not null);
        return result.Tag;
    }

    private static async Task<(byte[] Body, string? Tag, DateTimeOffset? LastModified)> GetAsync(TestHost host, string path)
    {
        using HttpResponseMessage response = await host.SendAsync(Transport.Http11, path);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        return (await response.Content.ReadAsByteArrayAsync(), response.Headers.ETag?.Tag, response.Content.Headers.LastModified);
    }

    private static Task<(byte[] Body, string? Tag, DateTimeOffset? LastModified)> EventuallyAsync(
        TestHost host, string path, Func<(byte[] Body, string? Tag, DateTimeOffset? LastModified), bool> done)
        => Poll.EventuallyAsync(() => GetAsync(host, path), done, Eventually);
}
