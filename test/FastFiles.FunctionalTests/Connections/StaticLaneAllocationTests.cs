using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>Runs alone: it reads the process-wide allocation counter, which any concurrent test would disturb.</summary>
[CollectionDefinition(nameof(StaticLaneAllocationTests), DisableParallelization = true)]
public sealed class StaticLaneAllocationCollection;

/// <summary>
/// What the static lane allocates per request: pipelined batches of browser-like requests on one warm connection
/// (reads split them anywhere, so the lane also waits for the rest of requests), measured with
/// <see cref="GC.GetTotalAllocatedBytes(bool)"/> around them; the client side reuses its buffers.
/// </summary>
[Collection(nameof(StaticLaneAllocationTests))]
public sealed class StaticLaneAllocationTests : IDisposable
{
    private const int BatchSize = 500;
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    [Fact]
    public async Task LaneRequests_AllocateNothing()
    {
        _files.Create("a.css", 1024);
        await using LaneHost host = await LaneHost.StartAsync(_files.Root);
        RawResponse first = await RawHttp.SendAsync(host.Lane, "/a.css");
        string request = "GET /a.css HTTP/1.1\r\nHost: localhost\r\nAccept: text/css,*/*;q=0.1\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n"
            + "User-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nCookie: session=3f2a9c1b7d\r\nSec-Fetch-Dest: style\r\n"
            + $"If-None-Match: \"other\"\r\nRange: bytes=0-511\r\n\r\n";
        byte[] batch = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat(request, BatchSize)));

        using Socket socket = await RawHttp.ConnectAsync(host.Lane);
        byte[] response = new byte[1 << 20];
        int single = await ExchangeAsync(socket, Encoding.ASCII.GetBytes(request), response, -1);
        Assert.Contains("206 Partial Content", Encoding.ASCII.GetString(response, 0, single), StringComparison.Ordinal);
        Assert.Equal(1024, first.Body.Length);

        // Warm-up: tiered compilation settles before anything is counted.
        for (int i = 0; i < 40; i++)
        {
            await ExchangeAsync(socket, batch, response, single * BatchSize);
        }

        // The least of several rounds: the lane's own allocations show in every round, while the rest of the process
        // (Kestrel's heartbeat, timers, the thread pool) allocates per second, which a slow round spreads over fewer requests.
        const int Batches = 10;
        long perRequest = long.MaxValue;
        for (int round = 0; round < 5; round++)
        {
            long before = GC.GetTotalAllocatedBytes(precise: true);
            for (int i = 0; i < Batches; i++)
            {
                await ExchangeAsync(socket, batch, response, single * BatchSize);
            }

            perRequest = Math.Min(perRequest, (GC.GetTotalAllocatedBytes(precise: true) - before) / (Batches * BatchSize));
        }

        // Everything in the process counts (the test's own client, timers); measured at about 12 B per request.
        Assert.True(perRequest < 32, $"{perRequest} bytes allocated per lane request");
    }

    // Sends the bytes and reads exactly expected response bytes (or one response's worth when expected is -1).
    private static async Task<int> ExchangeAsync(Socket socket, byte[] requests, byte[] into, int expected)
    {
        await socket.SendAsync(requests.AsMemory(), SocketFlags.None);
        int total = 0;
        while (expected < 0 ? !HasWholeResponse(into.AsSpan(0, total)) : total < expected)
        {
            int read = await socket.ReceiveAsync(into.AsMemory(total), SocketFlags.None);
            Assert.True(read > 0, "the server closed the connection");
            total += read;
        }

        return total;
    }

    private static bool HasWholeResponse(ReadOnlySpan<byte> received)
    {
        int end = received.IndexOf("\r\n\r\n"u8);
        return end >= 0 && received.Length >= end + 4 + 512;
    }
}
