using System.Net.Sockets;
using System.Text;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// An app that flushes a few bytes at a time (a streamed list, one WriteAsync per line) to a client that pipelines its
/// next request and then stops reading: the send path's writer queues each flush for its batching send in a block of
/// its own, so what it holds must be bounded by blocks, not only by bytes, or a few bytes per flush would hold a 16 KiB
/// block each.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathSmallFlushTests(SendPathSmallFlushTests.Fixture fixture) : IClassFixture<SendPathSmallFlushTests.Fixture>
{
    private const int LineSize = 50;

    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        private long _written;

        /// <summary>Response bytes the app has handed to Kestrel so far.</summary>
        public long Written => Interlocked.Read(ref _written);

        protected override Task<TestHost> StartHostAsync() => TestHost.StartAsync(app =>
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
            app.MapGet("/small", (HttpContext context) => context.Response.WriteAsync("small"));
        });
    }

    [Fact]
    public async Task A_client_that_stops_reading_holds_a_bounded_number_of_blocks_however_small_the_flushes()
    {
        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
        string host = _f.Host.Http.Authority;
        const int Lines = 400_000;
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

            // At most the batching bound's worth of blocks (MaxBatchBlocks), and the block being written.
            Assert.InRange(BlockPool.Outstanding, 0, SendPathWriter.MaxBatchBlocks + 2);
        }

        // The client is gone: every block goes back.
        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
    }
}
