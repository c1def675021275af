using System.Text;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// A request dribbled a byte at a time (slowloris) stays in the static lane and is answered at RequestHeadersTimeout
/// from its first bytes with what Kestrel itself answers (408, Connection: close), then closed. Handed to Kestrel after
/// a few reads, it would get Kestrel's own header timer afresh (issue 10: 0 of 200 such connections were closed after
/// 34 s with a 30 s timeout before).
/// </summary>
public sealed class StaticLaneSlowlorisTests : IDisposable
{
    private readonly TestFiles _files = new();

    [Fact]
    public async Task A_dribbled_request_gets_Kestrels_408_from_the_lane_and_is_closed()
    {
        _files.Create("one.txt", 100);
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, k => k.Limits.RequestHeadersTimeout = TimeSpan.FromSeconds(3));
        Task<string> kestrel = DribbleAsync(host.Plain);
        Task<string> lane = DribbleAsync(host.Lane);
        string expected = await kestrel;
        Assert.StartsWith("HTTP/1.1 408 Request Timeout\r\n", expected, StringComparison.Ordinal);
        Assert.Equal(LaneHost.WithoutDates(Encoding.Latin1.GetBytes(expected)), LaneHost.WithoutDates(Encoding.Latin1.GetBytes(await lane)));

    }

    // One header byte every 700 ms (a request still arriving a second after its first bytes), until the server closes
    // (bounded); returns everything the server sent.
    private static async Task<string> DribbleAsync(Uri endpoint)
    {
        (System.Net.Sockets.Socket socket, Stream stream) = await LaneHost.ConnectAsync(endpoint);
        using (socket)
        await using (stream)
        {
            await stream.WriteAsync(Encoding.ASCII.GetBytes("GET /one.txt HTTP/1.1\r\nHost: localhost\r\n"));
            var received = new MemoryStream();
            var buffer = new byte[4096];
            using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            Task<int> read = stream.ReadAsync(buffer, bound.Token).AsTask();
            while (!bound.IsCancellationRequested)
            {
                if (read.IsCompleted)
                {
                    int n;
                    try
                    {
                        n = await read;
                    }
                    catch (IOException)
                    {
                        n = 0;
                    }

                    if (n == 0)
                    {
                        break;
                    }

                    received.Write(buffer, 0, n);
                    read = stream.ReadAsync(buffer, bound.Token).AsTask();
                    continue;
                }

                try
                {
                    await stream.WriteAsync("X"u8.ToArray(), bound.Token);
                }
                catch (IOException)
                {
                    // The server closed its side; the read loop collects what it sent.
                }

                await Task.WhenAny(read, Task.Delay(700, bound.Token));
            }

            Assert.False(bound.IsCancellationRequested, "the server did not close the connection");
            return Encoding.Latin1.GetString(received.ToArray());
        }
    }

    public void Dispose() => _files.Dispose();
}
