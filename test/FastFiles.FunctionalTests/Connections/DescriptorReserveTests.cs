using System.Net.Sockets;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// The sample as shipped under a low RLIMIT_NOFILE, flooded with keep-alive connections: connections whose socket
/// falls within FastFiles' descriptor reserve are closed as they arrive, so the process never reaches its limit (where
/// the .NET runtime cannot start a thread and aborts). It keeps running, serves a file it must open on a kept
/// connection, logs one warning, and serves new connections once load drops.
/// </summary>
public sealed class DescriptorReserveTests : IDisposable
{
    // Above the sample's idle descriptors (about 220: two per loaded assembly) plus the default reserve of 64.
    private const int Limit = 400;
    private const int Reserve = 64;
    private readonly TestFiles _files = new();

    // A limit only a little above what the sample holds at rest (about 220): the reserve of 64 covered every descriptor a
    // socket could get, so every connection was refused, forever, where Kestrel alone serves. The reserve now shrinks to
    // half the room left above that, and says so once.
    [Fact]
    public async Task A_limit_just_above_the_descriptors_in_use_still_serves_connections()
    {
        byte[] small = _files.Create("small.txt", 1000);
        await using SampleProcess sample = await SampleProcess.StartAsync(_files.Root, maxOpenFiles: 270);
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(1));
        var connections = new List<NetworkStream>();
        try
        {
            for (int i = 0; i < 4; i++)
            {
                var connection = new NetworkStream(await RawHttp.ConnectAsync(sample.Http), ownsSocket: true);
                connections.Add(connection);
                RawResponse response = await RawHttp.ExchangeAsync(connection, "/small.txt", timeout.Token);
                Assert.Equal(200, response.Status);
                Assert.Equal(small, response.Body);
            }
        }
        finally
        {
            foreach (NetworkStream connection in connections)
            {
                await connection.DisposeAsync();
            }
        }

        Assert.True(sample.IsRunning);
        Assert.Contains(sample.Output, line => line.Contains("The descriptor reserve of 64 is reduced", StringComparison.Ordinal));
    }

    [Fact]
    public async Task Connections_within_the_reserve_are_refused_and_the_server_keeps_serving()
    {
        byte[] small = _files.Create("small.txt", 1000);
        byte[] cold = _files.Create("cold.bin", 1024 * 1024, seed: 2);
        await using SampleProcess sample = await SampleProcess.StartAsync(_files.Root, maxOpenFiles: Limit);
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        var kept = new List<NetworkStream>();
        int refused = 0;
        try
        {
            // More connections than descriptors: every one is either served or closed by the server.
            for (int i = 0; i < Limit && refused < 20; i++)
            {
                NetworkStream? connection = null;
                try
                {
                    // A refused connection is closed as it arrives: connect or the first read sees the reset or the end.
                    connection = new NetworkStream(await RawHttp.ConnectAsync(sample.Http), ownsSocket: true);
                    RawResponse response = await RawHttp.ExchangeAsync(connection, "/small.txt", timeout.Token);
                    Assert.Equal(200, response.Status);
                    Assert.Equal(small, response.Body);
                    kept.Add(connection);
                }
                catch (Exception ex) when (ex is IOException or SocketException)
                {
                    refused++;
                    if (connection is not null)
                    {
                        await connection.DisposeAsync();
                    }
                }
            }

            Assert.True(refused > 0, $"no connection was refused after {kept.Count}");
            Assert.True(sample.IsRunning, string.Join('\n', sample.Output));
            Assert.True(sample.OpenDescriptors() < Limit);

            // The reserve leaves room to open a file nothing has opened before.
            RawResponse opened = await RawHttp.ExchangeAsync(kept[0], "/cold.bin", timeout.Token);
            Assert.Equal(200, opened.Status);
            Assert.Equal(cold, opened.Body);

            // Load drops: a new connection is served.
            foreach (NetworkStream connection in kept.Skip(1).Take(kept.Count / 2))
            {
                await connection.DisposeAsync();
            }

            kept.RemoveRange(1, kept.Count / 2);
            RawResponse? recovered = null;
            for (int i = 0; i < 100 && recovered is null; i++)
            {
                try
                {
                    await using var connection = new NetworkStream(await RawHttp.ConnectAsync(sample.Http), ownsSocket: true);
                    recovered = await RawHttp.ExchangeAsync(connection, "/cold.bin", timeout.Token);
                }
                catch (Exception ex) when (ex is IOException or SocketException)
                {
                    // Closed descriptors are freed as the server notices the closes: try again, bounded.
                    await Task.Delay(100, timeout.Token);
                }
            }

            Assert.NotNull(recovered);
            Assert.Equal(200, recovered.Status);
            Assert.Equal(cold, recovered.Body);

            // One warning for the burst (the console logger writes asynchronously: wait for it, bounded).
            const string Warning = "within the last 64 kept free";
            for (int i = 0; i < 100 && !sample.Output.Any(l => l.Contains(Warning, StringComparison.Ordinal)); i++)
            {
                await Task.Delay(100, timeout.Token);
            }

            Assert.Equal(1, sample.Output.Count(l => l.Contains(Warning, StringComparison.Ordinal)));
            Assert.True(sample.IsRunning);
            Assert.DoesNotContain(sample.Output, l => l.StartsWith("fail:", StringComparison.Ordinal) || l.StartsWith("crit:", StringComparison.Ordinal));
        }
        finally
        {
            foreach (NetworkStream connection in kept)
            {
                await connection.DisposeAsync();
            }
        }
    }

    // The cheapest flood of an HTTPS endpoint is a TCP connect that never sends a ClientHello: TLS waits for it (the
    // handshake timeout), so the reserve must come before TLS, or such connections hold descriptors up to the limit.
    [Fact]
    public async Task Connections_that_never_start_tls_are_refused_within_the_reserve()
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        (SampleProcess sample, NetworkStream kept, byte[] cold) = await StartWithKeptConnectionAsync(timeout.Token);
        await using SampleProcess server = sample;
        await using NetworkStream keptConnection = kept;
        var silent = new List<Socket>();
        try
        {
            for (int i = 0; i < Limit; i++)
            {
                try
                {
                    silent.Add(await RawHttp.ConnectAsync(sample.Https));
                }
                catch (SocketException)
                {
                    // Refused as it arrived.
                }
            }

            // Refusals are logged once per burst (the console logger writes asynchronously: wait for it, bounded).
            const string Warning = "within the last 64 kept free";
            for (int i = 0; i < 300 && sample.IsRunning && !sample.Output.Any(l => l.Contains(Warning, StringComparison.Ordinal)); i++)
            {
                await Task.Delay(100, timeout.Token);
            }

            Assert.True(sample.IsRunning, string.Join('\n', sample.Output));
            Assert.Contains(sample.Output, l => l.Contains(Warning, StringComparison.Ordinal));

            // The reserve left room to open a file nothing has opened before.
            RawResponse opened = await RawHttp.ExchangeAsync(kept, "/cold.bin", timeout.Token);
            Assert.Equal(200, opened.Status);
            Assert.Equal(cold, opened.Body);
        }
        finally
        {
            foreach (Socket socket in silent)
            {
                socket.Dispose();
            }
        }
    }

    // Kestrel's accept loop takes every connection already queued before any connection middleware runs, so a burst
    // larger than the reserve used to fill the descriptor table before a single refusal closed one: the first request
    // through Kestrel then failed to load an assembly (EMFILE), or a thread start aborted the process. The refusal
    // now happens in the accept loop itself, one connection at a time.
    [Fact]
    public async Task A_burst_of_connections_larger_than_the_reserve_never_reaches_the_limit()
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        (SampleProcess sample, NetworkStream kept, byte[] cold) = await StartWithKeptConnectionAsync(timeout.Token);
        await using SampleProcess server = sample;
        await using NetworkStream keptConnection = kept;
        var burst = new List<Socket>();
        try
        {
            for (int round = 0; round < 3; round++)
            {
                // Twice the limit at once: the kernel completes the handshakes and queues them for accept(2). The
                // server's descriptors are counted throughout; connections may hold at most one of the reserved ones.
                int peak = 0;
                using var counting = new CancellationTokenSource();
                Task counter = Task.Run(() =>
                {
                    while (!counting.IsCancellationRequested && sample.IsRunning)
                    {
                        peak = Math.Max(peak, sample.OpenDescriptors());
                    }
                });
                Task<Socket>[] connects = Enumerable.Range(0, 2 * Limit).Select(_ => ConnectOrNullAsync(sample.Https)).ToArray();
                foreach (Socket? socket in await Task.WhenAll(connects))
                {
                    if (socket is not null)
                    {
                        burst.Add(socket);
                    }
                }

                await Task.Delay(200, timeout.Token);
                await counting.CancelAsync();
                await counter;
                Assert.InRange(peak, 1, Limit - (Reserve / 2));

                // A request Kestrel itself must serve (a file the lane has not cached), right behind the burst.
                RawResponse opened = await RawHttp.ExchangeAsync(kept, "/cold.bin", timeout.Token);
                Assert.Equal(200, opened.Status);
                Assert.Equal(cold, opened.Body);
                Assert.True(sample.IsRunning, string.Join('\n', sample.Output));
                Assert.True(sample.OpenDescriptors() < Limit);
                foreach (Socket socket in burst)
                {
                    socket.Dispose();
                }

                burst.Clear();
            }

            Assert.DoesNotContain(sample.Output, l => l.StartsWith("fail:", StringComparison.Ordinal) || l.StartsWith("crit:", StringComparison.Ordinal));
        }
        finally
        {
            foreach (Socket socket in burst)
            {
                socket.Dispose();
            }
        }

        static async Task<Socket> ConnectOrNullAsync(Uri endpoint)
        {
            try
            {
                return await RawHttp.ConnectAsync(endpoint);
            }
            catch (SocketException)
            {
                return null!;
            }
        }
    }

    // The sample under the low limit, with one kept connection that has been served a file the lane caches; cold.bin
    // is a file nothing has opened yet, so serving it needs a free descriptor and Kestrel's own request path.
    private async Task<(SampleProcess Sample, NetworkStream Kept, byte[] Cold)> StartWithKeptConnectionAsync(CancellationToken cancellationToken)
    {
        _files.Create("small.txt", 1000);
        byte[] cold = _files.Create("cold.bin", 1024 * 1024, seed: 2);
        SampleProcess sample = await SampleProcess.StartAsync(_files.Root, maxOpenFiles: Limit);
        var kept = new NetworkStream(await RawHttp.ConnectAsync(sample.Http), ownsSocket: true);
        Assert.Equal(200, (await RawHttp.ExchangeAsync(kept, "/small.txt", cancellationToken)).Status);
        return (sample, kept, cold);
    }

    public void Dispose() => _files.Dispose();
}
