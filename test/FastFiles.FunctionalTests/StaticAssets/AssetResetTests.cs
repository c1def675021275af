using System.Net.Sockets;
using System.Text;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Connections;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.StaticAssets;

/// <summary>
/// Clients that reset mid-body on <c>MapStaticAssets().WithFastFiles()</c> endpoints (full bodies and ranges, from
/// memory and through the send path, on every transport): nothing escapes the endpoint or is logged at Error, every
/// file descriptor is closed and every send-path block is back in the pool. Counts pool blocks process-wide, so it runs
/// in the send-path collection.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed class AssetResetTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    [Fact]
    public async Task Resets_mid_body_close_every_file_and_return_every_block()
    {
        string webRoot = Path.Combine(_files.Root, "wwwroot");
        _files.Create("wwwroot/big.png", 4 * 1024 * 1024);
        _files.Create("wwwroot/small.png", 60_000);
        string manifest = Path.Combine(_files.Root, "app.staticwebassets.endpoints.json");
        StaticWebAssetsManifest.Write(webRoot, manifest, compress: false);
        var logs = new LogRecorder();
        var recorder = new RequestRecorder();
        TestHost host = await TestHost.StartAsync(
            app =>
            {
                recorder.Install(app);
                app.MapStaticAssets(manifest).WithFastFiles();
            },
            services => services.AddSingleton<ILoggerProvider>(logs),
            webRoot: webRoot,
            contentRoot: _files.Root);
        try
        {
            for (int i = 0; i < 10; i++)
            {
                foreach (string path in new[] { "/big.png", "/small.png" })
                {
                    foreach (string? range in new[] { null, "bytes=100-" })
                    {
                        foreach (Transport transport in TransportMatrix.Tls.Append(Transport.H2c))
                        {
                            await ResetHttpClientAsync(host, transport, path, range);
                        }

                        await ResetHttp11Async(host.Http, path, range);
                        await ResetHttp11Async(host.HttpCopy, path, range);
                    }
                }
            }

            await OpenFileDescriptors.AssertNoneUnderAsync(_files.Root);
            Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));

            // The server still serves.
            RawResponse after = await RawHttp.SendAsync(host.Http, "/big.png");
            Assert.Equal(200, after.Status);
            Assert.Equal(File.ReadAllBytes(Path.Combine(webRoot, "big.png")), after.Body);
        }
        finally
        {
            // Stopping waits for every request, so whatever Kestrel logs after the app returns is in by then.
            await host.DisposeAsync();
        }

        Assert.Empty(recorder.Exceptions);
        logs.AssertNoErrors();
        await ResponseHeaders.AssertNoOpenFilesUnderAsync(_files.Root);
    }

    private static async Task ResetHttpClientAsync(TestHost host, Transport transport, string path, string? range)
    {
        using var cts = new CancellationTokenSource();
        HttpRequestMessage request = host.Request(transport, path);
        if (range is not null)
        {
            request.Headers.TryAddWithoutValidation("Range", range);
        }

        using HttpResponseMessage response = await host.Client.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, cts.Token);
        Assert.True(response.IsSuccessStatusCode);
        Stream body = await response.Content.ReadAsStreamAsync(cts.Token);
        _ = await body.ReadAtLeastAsync(new byte[8 * 1024], 1, throwOnEndOfStream: false, cts.Token);
        // Cancelling the body sends RST_STREAM (h2) or closes the connection (HTTP/1.1).
        await cts.CancelAsync();
    }

    private static async Task ResetHttp11Async(Uri endpoint, string path, string? range)
    {
        using Socket socket = await RawHttp.ConnectAsync(endpoint, receiveBufferSize: 16 * 1024);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET {path} HTTP/1.1\r\nHost: x\r\n{(range is null ? string.Empty : $"Range: {range}\r\n")}\r\n"));
        using var stream = new NetworkStream(socket, ownsSocket: false);
        (int status, _, _) = await RawHttp.ReadHeadAsync(stream, CancellationToken.None);
        Assert.True(status is 200 or 206);
        _ = await stream.ReadAtLeastAsync(new byte[8 * 1024], 1, throwOnEndOfStream: false);
        // Close with unread data: the kernel sends RST.
        socket.LingerState = new LingerOption(true, 0);
    }
}
