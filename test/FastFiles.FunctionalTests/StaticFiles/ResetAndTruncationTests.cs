using System.Net;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>Clients that leave mid-body and files that shrink mid-body: the server stays healthy and leaks nothing.</summary>
public sealed class ResetAndTruncationTests(ResetAndTruncationTests.Fixture fixture) : IClassFixture<ResetAndTruncationTests.Fixture>
{
    private const int BigLength = 16 * 1024 * 1024;
    private const int TruncatedFileLength = 32 * 1024 * 1024;
    private const int TruncateTo = 8 * 1024 * 1024;
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public RequestRecorder Recorder { get; } = new();

        public byte[] Big { get; private set; } = [];

        protected override async Task<TestHost> StartHostAsync()
        {
            Big = Files.Create("big.bin", BigLength);
            return await TestHost.StartAsync(app =>
            {
                Recorder.Install(app);
                // The stock middleware on top of FastFiles' SendFileAsync, for the same scenarios.
                StockOnFast.Map(app, Files.Root);
                app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(Files.Root), ServeUnknownFileTypes = true });
            });
        }

        protected override Task StoppingAsync()
        {
            Assert.Empty(Recorder.Exceptions);
            return Task.CompletedTask;
        }
    }

    [Theory]
    [InlineData("/big.bin")]
    [InlineData("/big.bin", "Range: bytes=1000-\r\n")]
    [InlineData("/stock-on-fast/big.bin")]
    public async Task Http11_reset_mid_body(string path, string? headers = null)
    {
        string id = Guid.NewGuid().ToString("N");
        using (Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 16 * 1024))
        {
            await socket.SendAsync(Encoding.ASCII.GetBytes($"GET {path}?awaitabort=1&id={id} HTTP/1.1\r\nHost: x\r\n{headers}\r\n"));
            using var stream = new NetworkStream(socket, ownsSocket: false);
            (int status, _, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, CancellationToken.None);
            Assert.True(status is 200 or 206);
            await ReadAtLeastAsync(stream, leftover.Length, 256 * 1024);
            socket.LingerState = new LingerOption(true, 0);
        }

        RequestRecord record = await _f.Recorder.WaitAsync(id);
        Assert.Null(record.Exception);
        Assert.True(record.Aborted);
        await AssertHealthyAsync();
    }

    [Theory]
    [InlineData(Transport.H2c, "/big.bin")]
    [InlineData(Transport.H2c, "/stock-on-fast/big.bin")]
    [InlineData(Transport.H2Tls, "/big.bin")]
    public async Task Http2_cancel_mid_body(Transport transport, string path)
    {
        string id = Guid.NewGuid().ToString("N");
        using (var cts = new CancellationTokenSource())
        {
            using HttpResponseMessage response = await _f.Host.Client.SendAsync(_f.Host.Request(transport, $"{path}?awaitabort=1&id={id}"), HttpCompletionOption.ResponseHeadersRead, cts.Token);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Stream body = await response.Content.ReadAsStreamAsync(cts.Token);
            await ReadAtLeastAsync(body, 0, 256 * 1024);
            await cts.CancelAsync();
        }

        RequestRecord record = await _f.Recorder.WaitAsync(id);
        Assert.Null(record.Exception);
        Assert.True(record.Aborted);
        await AssertHealthyAsync();
    }

    [Theory]
    [InlineData("")]
    [InlineData("/stock-on-fast")]
    public async Task File_truncated_mid_body_aborts_and_never_pads(string prefix)
    {
        string name = $"shrinking-{Guid.NewGuid():N}.bin";
        byte[] original = _f.Files.Create(name, TruncatedFileLength);
        string id = Guid.NewGuid().ToString("N");
        var received = new MemoryStream();
        using (Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 16 * 1024))
        {
            await socket.SendAsync(Encoding.ASCII.GetBytes($"GET {prefix}/{name}?awaitabort=1&id={id} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
            using var stream = new NetworkStream(socket, ownsSocket: false);
            (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, CancellationToken.None);
            Assert.Equal(200, status);
            Assert.Equal(TruncatedFileLength.ToString(System.Globalization.CultureInfo.InvariantCulture), headers["Content-Length"]);
            received.Write(leftover);

            // The slow reader holds the server back well before the truncation point (socket buffers are a few MiB).
            var chunk = new byte[16 * 1024];
            while (received.Length < 1024 * 1024)
            {
                int read = await stream.ReadAsync(chunk);
                Assert.NotEqual(0, read);
                received.Write(chunk, 0, read);
            }

            using (var writer = new FileStream(_f.Files.PathOf(name), FileMode.Open, FileAccess.Write, FileShare.ReadWrite | FileShare.Delete))
            {
                writer.SetLength(TruncateTo);
            }

            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            await RawHttp.ReadToEndAsync(stream, received, timeout.Token);
        }

        await AssertCutShortAsync(received.ToArray(), original, id);
    }

    [Fact]
    public async Task Http2_file_truncated_mid_body_resets_the_stream_and_never_pads()
    {
        string name = $"shrinking-{Guid.NewGuid():N}.bin";
        byte[] original = _f.Files.Create(name, TruncatedFileLength);
        string id = Guid.NewGuid().ToString("N");
        var received = new MemoryStream();
        using (HttpResponseMessage response = await _f.Host.Client.SendAsync(_f.Host.Request(Transport.H2c, $"/{name}?awaitabort=1&id={id}"), HttpCompletionOption.ResponseHeadersRead))
        {
            Assert.Equal(TruncatedFileLength, response.Content.Headers.ContentLength);
            Stream body = await response.Content.ReadAsStreamAsync();
            var chunk = new byte[16 * 1024];
            while (received.Length < 1024 * 1024)
            {
                int read = await body.ReadAsync(chunk);
                Assert.NotEqual(0, read);
                received.Write(chunk, 0, read);
            }

            using (var writer = new FileStream(_f.Files.PathOf(name), FileMode.Open, FileAccess.Write, FileShare.ReadWrite | FileShare.Delete))
            {
                writer.SetLength(TruncateTo);
            }

            // The stream reset surfaces as an exception from the body: the client cannot mistake it for a complete response.
            await Assert.ThrowsAnyAsync<IOException>(async () =>
            {
                int read;
                while ((read = await body.ReadAsync(chunk)) > 0)
                {
                    received.Write(chunk, 0, read);
                }
            });
        }

        await AssertCutShortAsync(received.ToArray(), original, id);
    }

    [Theory]
    [InlineData(Transport.H2c)]
    [InlineData(Transport.H2Tls)]
    [InlineData(Transport.Http11)]
    public async Task Concurrent_ranges_each_get_their_own_bytes(Transport transport)
    {
        const int Slice = 1024 * 1024;
        Task[] requests = Enumerable.Range(0, 16).Select(async i =>
        {
            int start = (i * Slice) - (i * 777);
            using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/big.bin", r => r.Headers.TryAddWithoutValidation("Range", $"bytes={start}-{start + Slice - 1}"));
            Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
            byte[] body = await response.Content.ReadAsByteArrayAsync();
            Assert.True(_f.Big.AsSpan(start, Slice).SequenceEqual(body), $"slice {i}");
        }).ToArray();
        await Task.WhenAll(requests);
    }

    private static async Task ReadAtLeastAsync(Stream stream, int already, int atLeast)
    {
        var buffer = new byte[16 * 1024];
        int received = already;
        while (received < atLeast)
        {
            int read = await stream.ReadAsync(buffer);
            Assert.NotEqual(0, read);
            received += read;
        }
    }

    // A truncated file's response: cut short before Content-Length bytes, everything that did arrive the file's real
    // content (nothing made up after the cut), the request recorded as aborted without an exception, and the server
    // still healthy.
    private async Task AssertCutShortAsync(byte[] body, byte[] original, string id)
    {
        Assert.True(body.Length < TruncatedFileLength, $"received {body.Length} bytes");
        Assert.True(body.AsSpan().SequenceEqual(original.AsSpan(0, body.Length)), "the body is not a prefix of the file");
        RequestRecord record = await _f.Recorder.WaitAsync(id);
        Assert.Null(record.Exception);
        Assert.True(record.Aborted);
        await AssertHealthyAsync();
    }

    private async Task AssertHealthyAsync()
    {
        await ResponseHeaders.AssertAtMostCachedFilesOpenUnderAsync(_f.Files.Root);
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage response = await _f.Host.SendAsync(transport, "/big.bin", r => r.Headers.TryAddWithoutValidation("Range", "bytes=-65536"));
            Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
            Assert.Equal(_f.Big.AsSpan(BigLength - 65536).ToArray(), await response.Content.ReadAsByteArrayAsync());
        }

        using HttpResponseMessage full = await _f.Host.SendAsync(Transport.Http11, "/big.bin");
        Assert.Equal(TestFiles.Sha256(_f.Big), TestFiles.Sha256(await full.Content.ReadAsByteArrayAsync()));
    }
}
