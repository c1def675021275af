using System.Diagnostics;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Hosting;

/// <summary>
/// The sample as shipped (static lane and zero-copy send path on its plaintext endpoint, TLS record coalescing on its
/// HTTPS one) is stopped with SIGTERM, which runs the host's StopAsync, while keep-alive clients fetch bodies back to
/// back over HTTP/1.1 and HTTP/2 over TLS: every response either completes with the right bytes or its connection
/// closes (never a cut-short body on a connection left open), the process exits cleanly and logs nothing at Error.
/// </summary>
public sealed class GracefulShutdownTests : IDisposable
{
    private const int Http1Connections = 48;
    private const int Http2Streams = 16;
    private readonly TestFiles _files = new();

    [Fact]
    public async Task Stop_under_load_completes_or_closes_every_response()
    {
        var bodies = new Dictionary<string, byte[]>
        {
            ["/small.txt"] = _files.Create("small.txt", 1000),
            ["/1mib.bin"] = _files.Create("1mib.bin", 1024 * 1024),
            ["/256k.bin"] = _files.Create("256k.bin", 256 * 1024, seed: 3),
        };
        string[] paths = [.. bodies.Keys];
        await using SampleProcess sample = await SampleProcess.StartAsync(_files.Root);
        using var bound = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        var figures = new Figures();

        using var h2 = new HttpClient(new SocketsHttpHandler
        {
            SslOptions = { RemoteCertificateValidationCallback = (_, _, _, _) => true },
            EnableMultipleHttp2Connections = true,
        });
        bool stopping = false;
        Task[] clients =
        [
            .. Enumerable.Range(0, Http1Connections).Select(i => Http1ClientAsync(sample.Http, paths, bodies, i, figures, bound.Token)),
            .. Enumerable.Range(0, Http2Streams).Select(i => Http2ClientAsync(h2, sample.Https, paths, bodies, i, figures, () => Volatile.Read(ref stopping), bound.Token)),
        ];

        // Stop once every kind of client has had responses completed, so requests are in flight on every path.
        while (Volatile.Read(ref figures.Http1Completed) < 2 * Http1Connections || Volatile.Read(ref figures.Http2Completed) < 2 * Http2Streams)
        {
            Assert.DoesNotContain(clients, c => c.IsFaulted);
            Assert.True(sample.IsRunning, string.Join('\n', sample.Output));
            await Task.Delay(20, bound.Token);
        }

        Volatile.Write(ref stopping, true);
        await SignalAsync(sample.ProcessId, "TERM");
        // A body cut short on a connection left open would hold its client here until the bound fails the test.
        await Task.WhenAll(clients).WaitAsync(bound.Token);
        await sample.WaitForExitAsync(bound.Token);

        Assert.Equal(Http1Connections, figures.ClosedMidResponse + figures.ClosedBetweenResponses + figures.FramingErrors);
        Assert.Equal(0, figures.FramingErrors);
        Assert.Equal(0, figures.WrongBytes);
        Assert.Equal(0, sample.ExitCode);
        Assert.DoesNotContain(sample.Output, l => l.StartsWith("fail:", StringComparison.Ordinal) || l.StartsWith("crit:", StringComparison.Ordinal));
    }

    public void Dispose() => _files.Dispose();

    /// <summary>Keep-alive requests until the server closes the connection; each response is whole or the connection ends.</summary>
    private static async Task Http1ClientAsync(Uri server, string[] paths, Dictionary<string, byte[]> bodies, int seed, Figures figures, CancellationToken cancellationToken)
    {
        using Socket socket = await RawHttp.ConnectAsync(server);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        var pending = new List<byte>();
        var chunk = new byte[64 * 1024];
        for (int i = seed; ; i++)
        {
            string path = paths[i % paths.Length];
            bool range = i % 5 == 4;
            string request = $"GET {path} HTTP/1.1\r\nHost: x\r\n{(range ? "Range: bytes=10-509\r\n" : "")}\r\n";
            try
            {
                await stream.WriteAsync(Encoding.Latin1.GetBytes(request), cancellationToken);
            }
            catch (IOException)
            {
                Interlocked.Increment(ref figures.ClosedBetweenResponses);
                return;
            }

            // Reads until the head and Content-Length bytes arrived, or the connection ended (0 or a reset).
            int headEnd = -1;
            long length = -1;
            bool ended = false;
            while (!ended && (headEnd < 0 || pending.Count - headEnd - 4 < length))
            {
                int read;
                try
                {
                    read = await stream.ReadAsync(chunk, cancellationToken);
                }
                catch (IOException)
                {
                    read = 0;
                }

                if (read == 0)
                {
                    ended = true;
                    break;
                }

                pending.AddRange(chunk.AsSpan(0, read));
                if (headEnd < 0 && (headEnd = RawHttp.IndexOfHeaderEnd(pending)) >= 0)
                {
                    length = ContentLength(Encoding.Latin1.GetString([.. pending.GetRange(0, headEnd)]));
                }
            }

            if (ended)
            {
                Interlocked.Increment(ref headEnd < 0 && pending.Count == 0 ? ref figures.ClosedBetweenResponses : ref figures.ClosedMidResponse);
                return;
            }

            byte[] body = [.. pending.GetRange(headEnd + 4, (int)length)];
            pending.RemoveRange(0, headEnd + 4 + (int)length);
            byte[] expected = range ? bodies[path].AsSpan(10, Math.Min(500, bodies[path].Length - 10)).ToArray() : bodies[path];
            if (!body.AsSpan().SequenceEqual(expected))
            {
                Interlocked.Increment(ref figures.WrongBytes);
            }

            Interlocked.Increment(ref figures.Http1Completed);
            if (pending.Count > 0)
            {
                // Bytes beyond the response before the next request: a framing error.
                Interlocked.Increment(ref figures.FramingErrors);
                return;
            }
        }
    }

    /// <summary>HTTP/2 over TLS requests until the server refuses: each either succeeds with the right bytes or fails.</summary>
    private static async Task Http2ClientAsync(HttpClient client, Uri server, string[] paths, Dictionary<string, byte[]> bodies, int seed, Figures figures, Func<bool> stopping, CancellationToken cancellationToken)
    {
        for (int i = seed; ; i++)
        {
            string path = paths[i % paths.Length];
            using var request = new HttpRequestMessage(HttpMethod.Get, new Uri(server, path))
            {
                Version = new Version(2, 0),
                VersionPolicy = HttpVersionPolicy.RequestVersionExact,
            };
            try
            {
                using HttpResponseMessage response = await client.SendAsync(request, cancellationToken);
                byte[] body = await response.Content.ReadAsByteArrayAsync(cancellationToken);
                if (!body.AsSpan().SequenceEqual(bodies[path]))
                {
                    Interlocked.Increment(ref figures.WrongBytes);
                }

                Interlocked.Increment(ref figures.Http2Completed);
            }
            catch (HttpRequestException) when (stopping())
            {
                // Refused or cut while stopping (GOAWAY, a reset stream or a closed connection): nothing was taken as whole.
                return;
            }
        }
    }

    private static long ContentLength(string head)
    {
        foreach (string line in head.Split("\r\n"))
        {
            if (line.StartsWith("Content-Length:", StringComparison.OrdinalIgnoreCase))
            {
                return long.Parse(line["Content-Length:".Length..].Trim(), System.Globalization.CultureInfo.InvariantCulture);
            }
        }

        return 0;
    }

    private static async Task SignalAsync(int pid, string signal)
    {
        using Process kill = Process.Start(new ProcessStartInfo("kill", $"-{signal} {pid}") { UseShellExecute = false })!;
        await kill.WaitForExitAsync();
        Assert.Equal(0, kill.ExitCode);
    }

    private sealed class Figures
    {
        public int Http1Completed;
        public int Http2Completed;
        public int ClosedMidResponse;
        public int ClosedBetweenResponses;
        public int FramingErrors;
        public int WrongBytes;
    }
}
