using System.Text;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// A request dribbled a byte at a time (slowloris) stays in the static lane and is closed at RequestHeadersTimeout
/// from its first bytes. Handed to Kestrel after a few reads, it would get Kestrel's own header timer afresh, and a 408
/// from Kestrel when that ran out; the lane closes without one (issue 10: 0 of 200 such connections were closed after
/// 34 s with a 30 s timeout before).
/// </summary>
public sealed class StaticLaneSlowlorisTests : IDisposable
{
    private readonly TestFiles _files = new();

    [Fact]
    public async Task A_dribbled_request_is_closed_by_the_lane_not_handed_to_Kestrel()
    {
        _files.Create("one.txt", 100);
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, k => k.Limits.RequestHeadersTimeout = TimeSpan.FromSeconds(3));
        (System.Net.Sockets.Socket socket, Stream stream) = await LaneHost.ConnectAsync(host.Lane);
        using (socket)
        await using (stream)
        {
            await stream.WriteAsync(Encoding.ASCII.GetBytes("GET /one.txt HTTP/1.1\r\nHost: localhost\r\n"));
            var buffer = new byte[4096];
            Task<int> read = stream.ReadAsync(buffer).AsTask();
            using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            // One header byte every 700 ms (a request still arriving a second after its first bytes), until the server closes (bounded).
            while (!read.IsCompleted && !bound.IsCancellationRequested)
            {
                try
                {
                    await stream.WriteAsync("X"u8.ToArray(), bound.Token);
                }
                catch (IOException)
                {
                    break;
                }

                await Task.WhenAny(read, Task.Delay(700, bound.Token));
            }

            int received;
            try
            {
                received = await read.WaitAsync(bound.Token);
            }
            catch (IOException)
            {
                received = 0;
            }

            // Closed, and with no response: Kestrel would have answered 408 first.
            Assert.Equal(0, received);
        }
    }

    public void Dispose() => _files.Dispose();
}
