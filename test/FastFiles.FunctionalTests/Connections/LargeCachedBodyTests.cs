using System.Net;
using System.Net.Sockets;
using System.Text;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// A cached body far larger than a flush batch (MaxCachedFileSize raised to megabytes), to a client that does not read:
/// the connection's output holds about a batch, not the body. Written whole, it held the whole body per response (100
/// such clients of an 8 MiB file: 886 MB). Counted at the send path's block pool, which holds everything the server has
/// written and the socket has not taken; the body must still arrive whole once the client reads.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed class LargeCachedBodyTests : IAsyncLifetime
{
    private const int Size = 8 * 1024 * 1024;
    private readonly TestFiles _files = new();
    private byte[] _content = [];
    private WebApplication _app = null!;
    private Uri[] _endpoints = [];

    public async Task InitializeAsync()
    {
        _content = _files.Create("big.bin", Size, seed: 7);
        File.SetLastWriteTimeUtc(_files.PathOf("big.bin"), DateTime.UtcNow.AddHours(-1));
        FastStaticFileOptions Files() => new() { FileProvider = new PhysicalFileProvider(_files.Root) };
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles(o =>
        {
            o.MaxCachedFileSize = 16 * 1024 * 1024;
            o.FileCacheSizeLimit = 256L * 1024 * 1024;
        });
        builder.WebHost.ConfigureKestrel(k =>
        {
            // Cached bodies stay copies from memory (sendfile only from 32 MiB on), through the app and through the lane.
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseZeroCopySendFile(o => o.CachedMinimumLength = 32 * 1024 * 1024);
            });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseZeroCopySendFile(o => o.CachedMinimumLength = 32 * 1024 * 1024)
                    .UseStaticLane(o => o.Roots.Add(new StaticLaneRootOptions { PhysicalPath = _files.Root, Files = Files() }));
            });
        });
        _app = builder.Build();
        _app.UseFastFiles(Files());
        _endpoints = await CodeEndpoints.StartAsync(_app);
    }

    public async Task DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
        _files.Dispose();
    }

    [Fact]
    public async Task A_client_that_does_not_read_holds_about_a_batch_of_a_large_cached_body()
    {
        foreach (Uri endpoint in _endpoints)
        {
            await StalledClientHoldsABatchAsync(endpoint, "/big.bin", null, _content);
        }
    }

    // 64 parts of 64 KiB from memory: each part no longer than a batch, so only flushing once a batch of them is written
    // bounds the output (they were all written before the first flush).
    [Fact]
    public async Task A_client_that_does_not_read_holds_about_a_batch_of_a_multipart_body_from_memory()
    {
        string ranges = "Range: bytes=" + string.Join(",", Enumerable.Range(0, 64).Select(i => $"{i * 131072}-{(i * 131072) + 65535}")) + "\r\n";
        RawResponse whole = await RawHttp.SendAsync(_endpoints[0], "/big.bin", extraHeaders: ranges);
        Assert.Equal(206, whole.Status);
        Assert.True(whole.Body.Length > 64 * 65536);
        await StalledClientHoldsABatchAsync(_endpoints[0], "/big.bin", ranges, null);
    }

    // The same through MapStaticAssets().WithFastFiles(), whose memory answers held the whole asset too.
    [Fact]
    public async Task A_client_that_does_not_read_holds_about_a_batch_of_a_large_asset_from_memory()
    {
        string webRoot = Path.Combine(_files.Root, "wwwroot");
        Directory.CreateDirectory(webRoot);
        File.Copy(_files.PathOf("big.bin"), Path.Combine(webRoot, "big.bin"));
        string manifest = Path.Combine(_files.Root, "app.staticwebassets.endpoints.json");
        FastFiles.Testing.StaticWebAssetsManifest.Write(webRoot, manifest, compress: false);
        await using TestHost host = await TestHost.StartAsync(
            app => app.MapStaticAssets(manifest).WithFastFiles(),
            services => services.AddFastFiles(o =>
            {
                o.MaxCachedFileSize = 16 * 1024 * 1024;
                o.FileCacheSizeLimit = 256L * 1024 * 1024;
            }),
            webRoot: webRoot,
            contentRoot: _files.Root);
        await StalledClientHoldsABatchAsync(host.Http, "/big.bin", null, _content);
    }

    private static async Task StalledClientHoldsABatchAsync(Uri endpoint, string target, string? headers, byte[]? content)
    {
        {
            // Cached (and, through the lane, its entry built) by a first request read to the end.
            RawResponse first = await RawHttp.SendAsync(endpoint, target, extraHeaders: headers);
            if (content is not null)
            {
                Assert.Equal(content, first.Body);
            }

            Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));

            using Socket socket = await RawHttp.ConnectAsync(endpoint, receiveBufferSize: 4096);
            await socket.SendAsync(Encoding.ASCII.GetBytes($"GET {target} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"));
            using var stream = new NetworkStream(socket, ownsSocket: false);
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            (int status, _, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
            Assert.Equal(headers is null ? 200 : 206, status);

            // The head is out, so a body written whole is in the writer by now, all but what the socket took. Batched,
            // a batch or two plus MaxResponseBufferSize (64 KiB): well under 1 MiB of 16 KiB blocks.
            long held = BlockPool.Outstanding;
            Assert.True(held < 64, $"{endpoint}: {held} send path blocks ({held * 16} KiB) held for a client that does not read");

            var body = new MemoryStream();
            body.Write(leftover);
            await RawHttp.ReadToEndAsync(stream, body, timeout.Token);
            Assert.Equal(first.Body.Length, body.Length);
            if (content is not null)
            {
                Assert.Equal(content, body.ToArray());
            }
        }

        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
    }
}
