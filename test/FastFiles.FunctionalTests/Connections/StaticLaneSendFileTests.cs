using System.Diagnostics.Metrics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// Files over the cache's size limit, on a plaintext endpoint with the zero-copy send path outside the static lane: the
/// lane answers them itself (head, then the body by sendfile(2)) instead of handing the connection to Kestrel, and the
/// bytes equal those of an endpoint with neither (except Date). Without the send path such a request is handed off.
/// </summary>
public sealed class StaticLaneSendFileTests : IAsyncLifetime
{
    private const int CacheLimit = 16 * 1024;
    private readonly TestFiles _files = new();
    private WebApplication _app = null!;
    private long _appRequests;
    private Uri _plain = null!;
    private Uri _laneSendPath = null!;
    private Uri _laneOnly = null!;
    private byte[] _big = null!;

    public async Task InitializeAsync()
    {
        _big = _files.Create("big.bin", (1024 * 1024) + 3);
        _files.Create("small.txt", 100);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles(o => o.MaxCachedFileSize = CacheLimit);
        FastStaticFileOptions Files() => new() { FileProvider = new PhysicalFileProvider(_files.Root), CacheControl = "public, max-age=60" };
        void Lane(StaticLaneOptions o) => o.Roots.Add(new StaticLaneRootOptions { PhysicalPath = _files.Root, Files = Files() });
        builder.WebHost.ConfigureKestrel(k =>
        {
            k.Listen(IPAddress.Loopback, 0, l => l.Protocols = HttpProtocols.Http1);
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                // The files are written just before the requests: no RecentWriteWindow, or they would be handed to Kestrel.
                l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.Zero).UseStaticLane(Lane);
            });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseStaticLane(Lane);
            });
        });
        _app = builder.Build();
        _app.Use((context, next) =>
        {
            Interlocked.Increment(ref _appRequests);
            return next(context);
        });
        _app.UseFastFiles(Files());
        Uri[] addresses = await CodeEndpoints.StartAsync(_app);
        (_plain, _laneSendPath, _laneOnly) = (addresses[0], addresses[1], addresses[2]);
    }

    public async Task DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
        _files.Dispose();
    }

    private IMeterFactory Meters => _app.Services.GetRequiredService<IMeterFactory>();

    // Pipelined in one write: a whole body, a range across the first 64 KiB, the tail, HEAD, a cached file between
    // two bodies from disk, and an unsatisfiable range; the last asks to close.
    private static byte[] Burst(string etag) => Encoding.ASCII.GetBytes(
        LaneHost.Request("GET", "/big.bin")
        + LaneHost.Request("GET", "/big.bin", "Range: bytes=5-70000\r\n")
        + LaneHost.Request("GET", "/small.txt")
        + LaneHost.Request("GET", "/big.bin", "Range: bytes=-7\r\n")
        + LaneHost.Request("HEAD", "/big.bin")
        + LaneHost.Request("GET", "/big.bin", $"If-None-Match: {etag}\r\n")
        + LaneHost.Request("GET", "/big.bin", "Range: bytes=9999999-\r\n")
        + LaneHost.Request("GET", "/big.bin", "Connection: close\r\n"));

    [Fact]
    public async Task Bodies_over_the_cache_limit_go_by_sendfile_from_the_lane_and_match_Kestrels_bytes()
    {
        using HttpResponseMessage first = await new HttpClient().GetAsync(new Uri(_plain, "/big.bin"));
        Assert.Equal(_big, await first.Content.ReadAsByteArrayAsync());
        string etag = first.Headers.ETag!.ToString();
        byte[] burst = Burst(etag);

        long before = Interlocked.Read(ref _appRequests);
        byte[] expected = await LaneHost.ExchangeAsync(_plain, [burst]);
        Assert.Equal(before + 8, Interlocked.Read(ref _appRequests));

        using var served = new InstrumentRecorder(Meters, "fastfiles.lane.requests");
        using var sendfile = new InstrumentRecorder(Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        using var handedOff = new InstrumentRecorder(Meters, "fastfiles.lane.handoffs");
        byte[] actual = await LaneHost.ExchangeAsync(_laneSendPath, [burst]);

        Assert.Equal(LaneHost.WithoutDates(expected), LaneHost.WithoutDates(actual));
        Assert.Equal(8, served.Total);
        Assert.Equal(0, handedOff.Total);
        Assert.Equal(before + 8, Interlocked.Read(ref _appRequests));
        // Two whole bodies, the two ranges: every file byte went by sendfile.
        Assert.Equal((2 * _big.Length) + (70000 - 5 + 1) + 7, sendfile.Total);
    }

    // Every split point of a request for a body from disk, followed by a cached one: one response each, in order.
    [Fact]
    public async Task A_request_split_anywhere_gets_the_same_bytes()
    {
        byte[] request = Encoding.ASCII.GetBytes(LaneHost.Request("GET", "/big.bin", "Range: bytes=100-20099\r\n") + LaneHost.Request("GET", "/small.txt", "Connection: close\r\n"));
        string expected = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(_plain, [request]));
        for (int split = 1; split < request.Length; split += 7)
        {
            byte[] actual = await LaneHost.ExchangeAsync(_laneSendPath, [request[..split], request[split..]]);
            Assert.Equal(expected, LaneHost.WithoutDates(actual));
        }
    }

    [Fact]
    public async Task Without_the_send_path_the_lane_hands_such_a_request_to_Kestrel()
    {
        using var uncached = new InstrumentRecorder(Meters, "fastfiles.lane.handoffs", new("fastfiles.lane.reason", "uncached"));
        long before = Interlocked.Read(ref _appRequests);
        byte[] response = await LaneHost.ExchangeAsync(_laneOnly, [Encoding.ASCII.GetBytes(LaneHost.Request("GET", "/big.bin", "Connection: close\r\n"))]);

        Assert.StartsWith("HTTP/1.1 200 OK\r\n", Encoding.Latin1.GetString(response), StringComparison.Ordinal);
        Assert.Equal(_big, response[^_big.Length..]);
        Assert.Equal(1, uncached.Total);
        Assert.Equal(before + 1, Interlocked.Read(ref _appRequests));
    }

    // A client that resets mid-body: the lane counts the head it wrote, but neither the request as answered nor the body
    // it did not send (256 MiB, sparse: far more than the socket buffers hold, so the send is still waiting at the reset).
    [Fact]
    public async Task A_body_the_client_cuts_short_is_not_counted_as_answered()
    {
        const long Size = 256L * 1024 * 1024;
        using (FileStream sparse = File.Create(Path.Combine(_files.Root, "huge.bin")))
        {
            sparse.SetLength(Size);
        }

        using var served = new InstrumentRecorder(Meters, "fastfiles.lane.requests");
        using var bytes = new InstrumentRecorder(Meters, "fastfiles.lane.bytes");
        using var connections = new InstrumentRecorder(Meters, "kestrel.active_connections");
        Socket socket = await RawHttp.ConnectAsync(_laneSendPath, receiveBufferSize: 64 * 1024);
        using (socket)
        {
            await socket.SendAsync(Encoding.ASCII.GetBytes(LaneHost.Request("GET", "/huge.bin")));
            var buffer = new byte[64 * 1024];
            int received = 0;
            while (received < buffer.Length)
            {
                int n = await socket.ReceiveAsync(buffer.AsMemory(received));
                Assert.NotEqual(0, n);
                received += n;
            }

            Assert.StartsWith("HTTP/1.1 200 OK\r\n", Encoding.Latin1.GetString(buffer), StringComparison.Ordinal);
            Assert.Equal(1, connections.Total);
            socket.LingerState = new LingerOption(true, 0);
        }

        // The reset ends the send and then the connection.
        await Poll.EventuallyAsync(() => Task.FromResult(connections.Total), open => open == 0, TimeSpan.FromSeconds(30));
        Assert.Equal(0, served.Total);
        Assert.InRange(bytes.Total, 1, 1024);
    }

    // The file is rewritten in place (same length, new stamp) after its headers were prebuilt: the lane never sends a
    // body that does not match them; the app answers with the new version.
    [Fact]
    public async Task A_file_changed_since_its_headers_were_built_is_never_sent_under_them()
    {
        byte[] request = Encoding.ASCII.GetBytes(LaneHost.Request("GET", "/big.bin", "Connection: close\r\n"));
        await LaneHost.ExchangeAsync(_laneSendPath, [request]);
        byte[] changed = [.. _big];
        changed[12345] ^= 0xFF;
        File.WriteAllBytes(_files.PathOf("big.bin"), changed);
        // Another second than the first version's, in the past (a future time is not sent as Last-Modified).
        File.SetLastWriteTimeUtc(_files.PathOf("big.bin"), new DateTime(2021, 3, 4, 5, 6, 7, DateTimeKind.Utc));

        byte[] response = await LaneHost.ExchangeAsync(_laneSendPath, [request]);
        string head = Encoding.Latin1.GetString(response, 0, response.Length - changed.Length);
        Assert.StartsWith("HTTP/1.1 200 OK\r\n", head, StringComparison.Ordinal);
        Assert.Equal(changed, response[^changed.Length..]);
        Assert.Contains(File.GetLastWriteTimeUtc(_files.PathOf("big.bin")).ToString("r", System.Globalization.CultureInfo.InvariantCulture), head, StringComparison.Ordinal);
    }
}
