using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using System.Net.WebSockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// A client that resets its connection while the server is sending: the app's pending request-body read throws what
/// Kestrel alone throws, an <see cref="IOException"/>: a <see cref="ConnectionResetException"/>, or "Unexpected end of
/// request content" when the receive side found the end of the stream first (Kestrel alone gives either, by the race
/// between its loops); a WebSocket's pending receive throws a <see cref="WebSocketException"/> with
/// <see cref="WebSocketError.ConnectionClosedPrematurely"/>. Apps that catch these for disconnects must not see a
/// cancellation instead.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathResetExceptionTests : IAsyncLifetime
{
    private const int Attempts = 6;
    private readonly ConcurrentDictionary<string, Exchange> _exchanges = new();
    private WebApplication _app = null!;
    private Uri[] _addresses = null!;

    public async Task InitializeAsync()
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k =>
        {
            // 0: Kestrel's own transport output; 1: the send path.
            k.Listen(IPAddress.Loopback, 0, l => l.Protocols = HttpProtocols.Http1);
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseZeroCopySendFile();
            });
        });
        _app = builder.Build();
        // Reads the request body while another task streams a response the client never reads.
        _app.MapPost("/duplex/{id}", async (string id, HttpContext context) =>
        {
            Exchange exchange = _exchanges[id];
            byte[] chunk = new byte[64 * 1024];
            Task writing = Task.Run(async () =>
            {
                try
                {
                    while (!context.RequestAborted.IsCancellationRequested)
                    {
                        await context.Response.Body.WriteAsync(chunk);
                        Interlocked.Add(ref exchange.Written, chunk.Length);
                    }
                }
                catch (Exception)
                {
                    // The write side's outcome is Kestrel's; the read side is what this test compares.
                }
            });
            byte[] buffer = new byte[4096];
            try
            {
                while (await context.Request.Body.ReadAsync(buffer) > 0)
                {
                }

                exchange.ReadFailure.TrySetResult(null);
            }
            catch (Exception ex)
            {
                exchange.ReadFailure.TrySetResult(ex);
            }

            await writing;
        });
        _app.UseWebSockets();
        // The same over a WebSocket: the receive pending while sends fill the unread connection.
        _app.Map("/ws/{id}", async (string id, HttpContext context) =>
        {
            Exchange exchange = _exchanges[id];
            using WebSocket socket = await context.WebSockets.AcceptWebSocketAsync();
            byte[] chunk = new byte[64 * 1024];
            Task sending = Task.Run(async () =>
            {
                try
                {
                    while (true)
                    {
                        await socket.SendAsync(chunk, WebSocketMessageType.Binary, endOfMessage: true, CancellationToken.None);
                        Interlocked.Add(ref exchange.Written, chunk.Length);
                    }
                }
                catch (Exception)
                {
                }
            });
            try
            {
                WebSocketReceiveResult result;
                do
                {
                    result = await socket.ReceiveAsync(new byte[4096], CancellationToken.None);
                }
                while (result.MessageType != WebSocketMessageType.Close);
                exchange.ReadFailure.TrySetResult(null);
            }
            catch (Exception ex)
            {
                exchange.ReadFailure.TrySetResult(ex);
            }

            await sending;
        });
        _addresses = await CodeEndpoints.StartAsync(_app);
    }

    public async Task DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    public async Task A_reset_while_the_server_sends_fails_the_pending_body_read_with_an_IOException_as_Kestrel_alone_does(int endpoint)
    {
        for (int attempt = 0; attempt < Attempts; attempt++)
        {
            Exception? failure = await ResetWhileStreamingAsync(endpoint, $"body{endpoint}-{attempt}",
                id => $"POST /duplex/{id} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10000000\r\n\r\n" + new string('x', 100));
            Assert.True(failure is IOException,
                $"endpoint {endpoint}, attempt {attempt}: the body read threw {failure?.GetType()}: {failure?.Message}");
        }
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    public async Task A_reset_while_the_server_sends_fails_the_pending_WebSocket_receive_as_closed_prematurely(int endpoint)
    {
        for (int attempt = 0; attempt < Attempts; attempt++)
        {
            Exception? failure = await ResetWhileStreamingAsync(endpoint, $"ws{endpoint}-{attempt}",
                id => $"GET /ws/{id} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
            Assert.True(failure is WebSocketException { WebSocketErrorCode: WebSocketError.ConnectionClosedPrematurely },
                $"endpoint {endpoint}, attempt {attempt}: the receive threw {failure?.GetType()}: {failure?.Message}");
        }
    }

    /// <summary>
    /// Sends <paramref name="request"/> and reads nothing, so the server's stream fills the connection; once it has
    /// written 1 MiB, resets the connection (an abortive close) and returns what the app's pending read threw.
    /// </summary>
    private async Task<Exception?> ResetWhileStreamingAsync(int endpoint, string id, Func<string, string> request)
    {
        var exchange = new Exchange();
        _exchanges[id] = exchange;
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        client.ReceiveBufferSize = 64 * 1024;
        await client.ConnectAsync(IPAddress.Loopback, _addresses[endpoint].Port);
        await client.SendAsync(Encoding.ASCII.GetBytes(request(id)));

        DateTime deadline = DateTime.UtcNow.AddSeconds(30);
        while (Volatile.Read(ref exchange.Written) < 1024 * 1024 && !exchange.ReadFailure.Task.IsCompleted && DateTime.UtcNow < deadline)
        {
            await Task.Delay(10);
        }

        if (exchange.ReadFailure.Task.IsCompleted)
        {
            Assert.Fail($"the read ended before the reset: {await exchange.ReadFailure.Task}");
        }

        Assert.True(Volatile.Read(ref exchange.Written) >= 1024 * 1024, "the server streamed into the unread connection");
        client.LingerState = new LingerOption(true, 0);
        client.Close();
        return await exchange.ReadFailure.Task.WaitAsync(TimeSpan.FromSeconds(30));
    }

    private sealed class Exchange
    {
        public long Written;

        public TaskCompletionSource<Exception?> ReadFailure { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
