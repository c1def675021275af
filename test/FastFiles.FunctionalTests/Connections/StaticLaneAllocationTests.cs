using System.Diagnostics;
using System.Net;
using System.Globalization;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>Runs alone: it reads the process-wide allocation counter, which any concurrent test would disturb.</summary>
[CollectionDefinition(nameof(StaticLaneAllocationTests), DisableParallelization = true)]
public sealed class StaticLaneAllocationCollection;

/// <summary>
/// What the static lane allocates per request: pipelined batches of browser-like requests on one warm connection
/// (reads split them anywhere, so the lane also waits for the rest of requests), sent by a client in its own process
/// (node), and measured with <see cref="GC.GetTotalAllocatedBytes(bool)"/> around them. The lane sits inside the
/// zero-copy send path, whose sends gather blocks without allocating: on Kestrel's own socket output a flush of several
/// blocks allocates the runtime's I/O vector and handle arrays (about 5.5 B per request here, seen as
/// <c>IOVector[]</c> and <c>GCHandle[]</c> in the runtime's allocation events), which are not the lane's.
/// </summary>
[Collection(nameof(StaticLaneAllocationTests))]
public sealed class StaticLaneAllocationTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    // Pipelined batches of 500 (the reads complete at once), and one request at a time (every read waits for the next
    // request: the send path's input then hands the wait to the transport's pipe, which must not allocate to resume it).
    [Theory]
    [InlineData(500, 20, 1.0)]
    [InlineData(1, 4000, 8.0)]
    public async Task LaneRequests_AllocateNothing(int batchSize, int batchesPerRound, double limit)
    {
        _files.Create("a.css", 1024);
        await using LaneApp host = await LaneApp.StartAsync(_files.Root);
        string request = "GET /a.css HTTP/1.1\r\nHost: localhost\r\nAccept: text/css,*/*;q=0.1\r\nAccept-Encoding: gzip, deflate, br, zstd\r\n"
            + "User-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nCookie: session=3f2a9c1b7d\r\nSec-Fetch-Dest: style\r\n"
            + "If-None-Match: \"other\"\r\nRange: bytes=0-511\r\n\r\n";
        int responseLength = await ResponseLengthAsync(host.Lane, request);

        var start = new ProcessStartInfo("node")
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "Connections", "lane-client.js"));
        start.ArgumentList.Add(host.Lane.Port.ToString(CultureInfo.InvariantCulture));
        start.ArgumentList.Add(Convert.ToBase64String(Encoding.ASCII.GetBytes(request)));
        start.ArgumentList.Add(batchSize.ToString(CultureInfo.InvariantCulture));
        start.ArgumentList.Add(responseLength.ToString(CultureInfo.InvariantCulture));
        using Process client = Process.Start(start)!;
        Task<string> errors = client.StandardError.ReadToEndAsync();
        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(120));
        try
        {
            Assert.Equal("ready", await client.StandardOutput.ReadLineAsync(bound.Token));

            // Warm-up: tiered compilation settles before anything is counted.
            await RunAsync(client, 2 * batchesPerRound, bound.Token);

            // The least of several rounds: the lane's own allocations would show in every round, while the rest of the
            // process (Kestrel's heartbeat, timers, this test's two lines to the client) allocates per round or per second.
            double perRequest = double.MaxValue;
            for (int round = 0; round < 5; round++)
            {
                long before = GC.GetTotalAllocatedBytes(precise: true);
                await RunAsync(client, batchesPerRound, bound.Token);
                perRequest = Math.Min(perRequest, (GC.GetTotalAllocatedBytes(precise: true) - before) / (double)(batchesPerRound * batchSize));
            }

            // The smallest object is 24 bytes: anything allocated per request would show as at least that. One request at
            // a time, the process's own background work (timers, the heartbeat) spreads over fewer requests per second.
            Assert.True(perRequest < limit, $"{perRequest:F2} bytes allocated per lane request");
            Assert.Equal(0, host.AppRequests);
        }
        finally
        {
            client.StandardInput.Close();
            if (!client.WaitForExit(10_000))
            {
                client.Kill(entireProcessTree: true);
            }
        }

        Assert.True(client.ExitCode == 0, await errors);
    }

    // One answer to the request: its head and the 512-byte range.
    private static async Task<int> ResponseLengthAsync(Uri endpoint, string request)
    {
        using System.Net.Sockets.Socket socket = await RawHttp.ConnectAsync(endpoint);
        await socket.SendAsync(Encoding.ASCII.GetBytes(request), System.Net.Sockets.SocketFlags.None);
        byte[] received = new byte[64 * 1024];
        int total = 0;
        while (true)
        {
            int read = await socket.ReceiveAsync(received.AsMemory(total), System.Net.Sockets.SocketFlags.None);
            Assert.True(read > 0, "the server closed the connection");
            total += read;
            int end = received.AsSpan(0, total).IndexOf("\r\n\r\n"u8);
            if (end >= 0 && total >= end + 4 + 512)
            {
                Assert.StartsWith("HTTP/1.1 206 Partial Content\r\n", Encoding.ASCII.GetString(received, 0, end), StringComparison.Ordinal);
                Assert.Equal(end + 4 + 512, total);
                return total;
            }
        }
    }

    private static async Task RunAsync(Process client, int batches, CancellationToken cancellationToken)
    {
        await client.StandardInput.WriteLineAsync(batches.ToString(CultureInfo.InvariantCulture));
        await client.StandardInput.FlushAsync(cancellationToken);
        string? line = await client.StandardOutput.ReadLineAsync(cancellationToken);
        Assert.True(line == "done", $"client: {line}");
    }
}

/// <summary>One lane endpoint (HTTP/1.1, plaintext) inside the zero-copy send path, in front of UseFastFiles.</summary>
internal sealed class LaneApp : IAsyncDisposable
{
    private readonly WebApplication _app;
    private long _appRequests;

    private LaneApp(WebApplication app) => _app = app;

    public Uri Lane { get; private set; } = null!;

    public long AppRequests => Interlocked.Read(ref _appRequests);

    public static async Task<LaneApp> StartAsync(string root)
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l =>
        {
            l.Protocols = HttpProtocols.Http1;
            l.UseZeroCopySendFile().UseStaticLane(o => o.Roots.Add(new StaticLaneRootOptions { PhysicalPath = root, Files = LaneHost.FilesFor(root) }));
        }));
        var host = new LaneApp(builder.Build());
        host._app.Use((context, next) =>
        {
            Interlocked.Increment(ref host._appRequests);
            return next(context);
        });
        host._app.UseFastFiles(LaneHost.FilesFor(root));
        await host._app.StartAsync();
        host.Lane = new Uri(host._app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First());
        return host;
    }

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }
}
