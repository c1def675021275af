using System.Net.Sockets;
using System.Text;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// An app that flushes a few bytes at a time (a streamed list, one WriteAsync per line) to a client that pipelines its
/// next request and then stops reading: the send path's writer holds those flushes for its batching send. What it holds
/// must follow Kestrel's <c>MaxResponseBufferSize</c> as Kestrel's own output does, and small flushes must share blocks
/// rather than hold a 16 KiB block each.
/// </summary>
public abstract class SendPathSmallFlushTestsBase(SendPathSmallFlushTestsBase.Fixture fixture)
{
    private const int LineSize = 50;

    private readonly Fixture _f = fixture;

    /// <summary>The blocks a connection held back for the batching send may use, at most.</summary>
    protected abstract long MostBlocks { get; }

    public abstract class Fixture(long? maxResponseBufferSize) : HostFixture
    {
        private long _written;

        /// <summary>Response bytes the app has handed to Kestrel so far.</summary>
        public long Written => Interlocked.Read(ref _written);

        protected override Task<TestHost> StartHostAsync() => TestHost.StartAsync(
            app =>
            {
                app.MapGet("/lines/{n:int}", async (HttpContext context, int n) =>
                {
                    context.Response.ContentLength = (long)n * LineSize;
                    byte[] line = Encoding.ASCII.GetBytes(new string('x', LineSize - 1) + "\n");
                    for (int i = 0; i < n; i++)
                    {
                        await context.Response.Body.WriteAsync(line, context.RequestAborted);
                        Interlocked.Add(ref _written, LineSize);
                    }
                });
                app.MapGet("/small", (HttpContext context) =>
                {
                    context.Response.ContentLength = 5;
                    return context.Response.WriteAsync("small");
                });
            },
            configureKestrel: k => k.Limits.MaxResponseBufferSize = maxResponseBufferSize);
    }

    [Fact]
    public async Task A_client_that_stops_reading_holds_what_the_response_buffer_limit_allows_however_small_the_flushes()
    {
        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
        string host = _f.Host.Http.Authority;
        const int Lines = 200_000;
        using (Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 4096))
        {
            // Kestrel's first read waits for the requests; its second returns at once with the third request behind the
            // second, so the long response's flushes go to the batching send, which soon waits for socket room.
            await socket.SendAsync(Encoding.ASCII.GetBytes(
                $"GET /small HTTP/1.1\r\nHost: {host}\r\n\r\n" +
                $"GET /lines/{Lines} HTTP/1.1\r\nHost: {host}\r\n\r\n" +
                $"GET /small HTTP/1.1\r\nHost: {host}\r\n\r\n"));

            // Wait until the app is held in a write: nothing more written for a while, its response unfinished.
            long seen = -1;
            int still = 0;
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            while (still < 40)
            {
                await Task.Delay(25, timeout.Token);
                long now = _f.Written;
                still = now == seen && now > 0 ? still + 1 : 0;
                seen = now;
            }

            Assert.InRange(seen, 1, (long)Lines * LineSize - 1);
            Assert.InRange(BlockPool.Outstanding, 0, MostBlocks);

            // Reading again, the client gets the three answers whole and in order: no packed flush was lost, reordered
            // or written over. First a larger receive buffer: with 4 KiB the receive window can settle just under the
            // server's segment size, and Linux then sends only when its persist timer fires, a few KB/s (2 stalls in
            // about 100 rounds of this exchange, the writer holding nothing and the kernel 1.6 MB; none in 300 rounds
            // with 256 KiB).
            socket.ReceiveBufferSize = 256 * 1024;
            using var stream = new NetworkStream(socket, ownsSocket: false);
            var reader = new HttpConnectionReader(stream);
            for (int i = 0; i < 3; i++)
            {
                (int status, _, byte[] body) = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
                Assert.Equal(200, status);
                if (i == 1)
                {
                    Assert.Equal((long)Lines * LineSize, body.LongLength);
                    for (int at = 0; at < body.Length; at += LineSize)
                    {
                        Assert.True(body.AsSpan(at, LineSize - 1).IndexOfAnyExcept((byte)'x') < 0 && body[at + LineSize - 1] == '\n', $"Line at {at} is not the app's.");
                    }
                }
                else
                {
                    Assert.Equal("small", Encoding.ASCII.GetString(body));
                }
            }

            Assert.False(reader.HasBufferedBytes);
        }

        // The client is gone: every block goes back.
        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
    }

    // Bytes held up to the limit, packed into 16 KiB blocks: the limit's worth of full blocks, a partly sent first one
    // and a partly filled last one.
    private protected static long BlocksFor(long bytes) => (bytes / BlockPool.BlockSize) + 2;
}

/// <summary>Kestrel's default limit, 64 KiB: at most six blocks (before they were packed, 1,312 for 50-byte writes).</summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathSmallFlushTests(SendPathSmallFlushTests.DefaultLimit fixture)
    : SendPathSmallFlushTestsBase(fixture), IClassFixture<SendPathSmallFlushTests.DefaultLimit>
{
    protected override long MostBlocks => BlocksFor(64 * 1024);

    public sealed class DefaultLimit() : Fixture(64 * 1024);
}

/// <summary>A limit of 8 KiB: two blocks at most, where the default's bound would let five fill.</summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathSmallFlushLowLimitTests(SendPathSmallFlushLowLimitTests.LowLimit fixture)
    : SendPathSmallFlushTestsBase(fixture), IClassFixture<SendPathSmallFlushLowLimitTests.LowLimit>
{
    protected override long MostBlocks => BlocksFor(8 * 1024);

    public sealed class LowLimit() : Fixture(8 * 1024);
}

/// <summary>No limit (null), as Kestrel allows: bytes are not bounded, blocks still are (MaxBatchBlocks).</summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathSmallFlushNoLimitTests(SendPathSmallFlushNoLimitTests.NoLimit fixture)
    : SendPathSmallFlushTestsBase(fixture), IClassFixture<SendPathSmallFlushNoLimitTests.NoLimit>
{
    protected override long MostBlocks => SendPathWriter.MaxBatchBlocks + 2;

    public sealed class NoLimit() : Fixture(null);
}

/// <summary>A limit of 0, Kestrel's "every write waits until all is sent": no batching, so at most two blocks.</summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathSmallFlushZeroLimitTests(SendPathSmallFlushZeroLimitTests.ZeroLimit fixture)
    : SendPathSmallFlushTestsBase(fixture), IClassFixture<SendPathSmallFlushZeroLimitTests.ZeroLimit>
{
    protected override long MostBlocks => BlocksFor(0);

    public sealed class ZeroLimit() : Fixture(0);
}
