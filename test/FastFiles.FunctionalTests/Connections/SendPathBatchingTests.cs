using System.Globalization;
using System.Net.Sockets;
using System.Text;
using System.Text.RegularExpressions;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// Pipelined requests on the send path: a flush made while the next request is already in the input is held back and
/// sent from the thread pool with the responses written meanwhile. These tests hold it to what Kestrel's own output
/// gives: the same bytes in the same order (<see cref="TestHost.HttpCopy"/> has no send path), no response kept back
/// behind a slow request that follows it, and nothing leaked when the client goes away mid-batch.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathBatchingTests(SendPathBatchingTests.Fixture fixture) : IClassFixture<SendPathBatchingTests.Fixture>
{
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        private TaskCompletionSource _gate = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public LogRecorder Logs { get; } = new();

        public byte[] Big { get; private set; } = [];

        /// <summary>Requests to /gate wait for this; each test that uses it opens a new one.</summary>
        public TaskCompletionSource Gate => Volatile.Read(ref _gate);

        public void NewGate() => Volatile.Write(ref _gate, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously));

        protected override async Task<TestHost> StartHostAsync()
        {
            Big = Files.Create("big.bin", 300_000);
            Files.Create("small.bin", 1000);
            File.SetLastWriteTimeUtc(Files.PathOf("big.bin"), DateTime.UtcNow.AddHours(-1));
            File.SetLastWriteTimeUtc(Files.PathOf("small.bin"), DateTime.UtcNow.AddHours(-1));
            string root = Files.Root;
            return await TestHost.StartAsync(
                app =>
                {
                    // An app response of n bytes, written in flushes of up to 50,000 bytes (several batches' worth).
                    app.MapGet("/bytes/{n:int}", async (HttpContext context, int n) =>
                    {
                        context.Response.ContentLength = n;
                        for (int at = 0; at < n; at += 50_000)
                        {
                            int size = Math.Min(50_000, n - at);
                            Memory<byte> memory = context.Response.BodyWriter.GetMemory(size);
                            for (int i = 0; i < size; i++)
                            {
                                memory.Span[i] = (byte)('a' + ((at + i) % 26));
                            }

                            context.Response.BodyWriter.Advance(size);
                            await context.Response.BodyWriter.FlushAsync();
                        }
                    });
                    app.MapGet("/gate", async (HttpContext context) =>
                    {
                        await Gate.Task;
                        context.Response.ContentLength = 6;
                        await context.Response.WriteAsync("opened");
                    });
                    app.UseFastFiles(new FastStaticFileOptions { RequestPath = "/fast", FileProvider = new PhysicalFileProvider(root) });
                },
                services =>
                {
                    services.AddFastFiles(o => o.EnableFileCache = false);
                    services.AddSingleton<ILoggerProvider>(Logs);
                });
        }
    }

    [Fact]
    public async Task Pipelined_bursts_of_copies_holes_and_large_bodies_match_kestrels_own_output_byte_for_byte()
    {
        string host = _f.Host.Http.Authority;
        var burst = new StringBuilder();
        for (int i = 0; i < 6; i++)
        {
            burst.Append(CultureInfo.InvariantCulture, $"GET /bytes/{100 + i} HTTP/1.1\r\nHost: {host}\r\n\r\n");
            burst.Append(CultureInfo.InvariantCulture, $"GET /fast/big.bin HTTP/1.1\r\nHost: {host}\r\n\r\n");
            burst.Append(CultureInfo.InvariantCulture, $"GET /bytes/{70_000 + i} HTTP/1.1\r\nHost: {host}\r\n\r\n");
            burst.Append(CultureInfo.InvariantCulture, $"HEAD /fast/small.bin HTTP/1.1\r\nHost: {host}\r\n\r\n");
            burst.Append(CultureInfo.InvariantCulture, $"GET /fast/small.bin HTTP/1.1\r\nHost: {host}\r\nRange: bytes=10-19\r\n\r\n");
            burst.Append(CultureInfo.InvariantCulture, $"GET /fast/big.bin HTTP/1.1\r\nHost: {host}\r\nRange: bytes=1000-200000\r\n\r\n");
        }

        burst.Append(CultureInfo.InvariantCulture, $"GET /bytes/5 HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        byte[] request = Encoding.ASCII.GetBytes(burst.ToString());

        // A fast reader and one that stops now and then, so the socket fills while batches are held back.
        foreach (bool slow in new[] { false, true })
        {
            byte[] withSendPath = await ExchangeToCloseAsync(_f.Host.Http, request, slow);
            byte[] kestrel = await ExchangeToCloseAsync(_f.Host.HttpCopy, request, slow);
            Assert.Equal(LaneHost.WithoutDates(kestrel), LaneHost.WithoutDates(withSendPath));
            Assert.Equal(37, Regex.Count(Encoding.Latin1.GetString(withSendPath), "HTTP/1.1 (200|206) "));
        }
    }

    [Fact]
    public async Task A_response_is_not_held_back_behind_a_slow_pipelined_request()
    {
        string host = _f.Host.Http.Authority;
        for (int i = 0; i < 40; i++)
        {
            // Every other round the first response is large and the client late to read it, so the batching send is
            // waiting for socket room when the second response is flushed: that one must leave after it, without a
            // flush that only the gated request would make.
            bool full = i % 2 == 1;
            int firstSize = full ? 300_000 + i : 1000 + i;
            _f.NewGate();
            using Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: full ? 4096 : null);
            using var stream = new NetworkStream(socket, ownsSocket: false);
            var reader = new HttpConnectionReader(stream);
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));

            // One write: the responses before /gate are flushed while the next request is already in Kestrel's input
            // (from the second on, the input has been read without waiting, so the flush is held for a batch).
            await socket.SendAsync(Encoding.ASCII.GetBytes(
                $"GET /bytes/{firstSize} HTTP/1.1\r\nHost: {host}\r\n\r\n" +
                $"GET /bytes/{2000 + i} HTTP/1.1\r\nHost: {host}\r\n\r\n" +
                $"GET /gate HTTP/1.1\r\nHost: {host}\r\n\r\n"));
            if (full)
            {
                // Not a timing assumption: only a pause that lets the server's socket buffer fill.
                await Task.Delay(20, timeout.Token);
            }

            // Both arrive whole while the last request is still waiting for its gate.
            var first = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
            Assert.Equal(firstSize, first.Body.Length);
            var second = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
            Assert.Equal(200, second.Status);
            Assert.Equal(2000 + i, second.Body.Length);
            Assert.False(_f.Gate.Task.IsCompleted);

            _f.Gate.SetResult();
            var third = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
            Assert.Equal("opened", Encoding.ASCII.GetString(third.Body));
        }
    }

    [Fact]
    public async Task Clients_that_reset_mid_batch_leak_no_block_and_log_no_error()
    {
        string host = _f.Host.Http.Authority;
        var burst = new StringBuilder();
        for (int i = 0; i < 64; i++)
        {
            burst.Append(CultureInfo.InvariantCulture, $"GET /bytes/{2000 + (i * 500)} HTTP/1.1\r\nHost: {host}\r\n\r\n");
        }

        byte[] request = Encoding.ASCII.GetBytes(burst.ToString());
        var chunk = new byte[4096];
        for (int i = 0; i < 100; i++)
        {
            using Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 4096);
            await socket.SendAsync(request);
            // Some bytes, a different amount each time, then a reset (linger 0) while batches are queued or leaving.
            int want = (i % 5) * 20_000;
            int got = 0;
            int read = 1;
            while (got < want && read > 0)
            {
                read = await socket.ReceiveAsync(chunk);
                got += read;
            }

            socket.LingerState = new LingerOption(true, 0);
            socket.Close();
        }

        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
        _f.Logs.AssertNoErrors();

        // The server still answers pipelined requests in order.
        byte[] after = await ExchangeToCloseAsync(
            _f.Host.Http,
            Encoding.ASCII.GetBytes($"GET /bytes/7 HTTP/1.1\r\nHost: {host}\r\n\r\nGET /bytes/3 HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
            slow: false);
        string text = Encoding.ASCII.GetString(after);
        Assert.EndsWith("abcdefg", text[..text.IndexOf("HTTP/1.1", 10, StringComparison.Ordinal)], StringComparison.Ordinal);
        Assert.EndsWith("abc", text, StringComparison.Ordinal);
    }

    // A fast reader, or one with an 8 KiB buffer that stops for 5 ms every 16 reads of 3,000 bytes.
    private static Task<byte[]> ExchangeToCloseAsync(Uri address, byte[] request, bool slow)
        => RawHttp.ExchangeToCloseAsync(address, request, slow ? SlowReader : ReadPace.Fast, TimeSpan.FromSeconds(60));

    private static readonly ReadPace SlowReader = new(8192, 3000, PauseEvery: 16, Pause: TimeSpan.FromMilliseconds(5));
}
