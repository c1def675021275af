using System.Diagnostics.Metrics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Connections;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// A file rewritten in place (same inode, same length, other bytes) while a slow reader downloads it: nothing can make
/// the bytes already sent consistent, so the response must not look complete. The reader gets either the whole old
/// version or a body cut short on a connection (HTTP/1.1) or stream (HTTP/2) that ends, never Content-Length bytes that
/// mix two versions. Over the zero-copy send path (sendfile), the copy path, FastFiles' SendFileAsync under
/// UseStaticFiles, the file result, ranges, and HTTP/2.
/// </summary>
public sealed class RewriteInPlaceTests(RewriteInPlaceTests.Fixture fixture) : IClassFixture<RewriteInPlaceTests.Fixture>
{
    private const int Length = 16 * 1024 * 1024;
    private const int ReadBeforeRewrite = 1024 * 1024;
    private const int FileRewritten = 1003;
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public RequestRecorder Recorder { get; } = new();

        public LogCapture Logs { get; } = new();

        public IMeterFactory Meters => Host.Services.GetRequiredService<IMeterFactory>();

        /// <summary>A send path endpoint with the default <c>RecentWriteWindow</c> (the main one sends files just written).</summary>
        public Uri SendPathDefaults => Host.Addresses[4];

        /// <summary>The static lane inside the send path, serving the files' root itself.</summary>
        public Uri Lane => Host.Addresses[5];

        protected override async Task<TestHost> StartHostAsync()
        {
            return await TestHost.StartAsync(
                app =>
                {
                    Recorder.Install(app);
                    StockOnFast.Map(app, Files.Root);
                    // The file result opens the file for this response (no cache); the middleware below leases the cache's
                    // open descriptor.
                    app.MapGet("/result/{name}", (string name) => FastResults.PhysicalFile(Files.PathOf(name)));
                    app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(Files.Root), ServeUnknownFileTypes = true });
                },
                services =>
                {
                    services.AddFastFiles();
                    services.AddSingleton<ILoggerProvider>(Logs);
                    services.AddLogging(b => b.AddFilter("FastFiles", LogLevel.Information));
                },
                configureKestrel: k =>
                {
                    k.Listen(IPAddress.Loopback, 0, l =>
                    {
                        l.Protocols = HttpProtocols.Http1;
                        l.UseZeroCopySendFile(o => o.MinimumLength = 0);
                    });
                    k.Listen(IPAddress.Loopback, 0, l =>
                    {
                        l.Protocols = HttpProtocols.Http1;
                        // The static lane in the send path: it checks the descriptor just before a body goes out, so the
                        // body's final chunk is the one place a later rewrite is caught. Files are written just before
                        // the requests: no RecentWriteWindow, or the lane would hand them to Kestrel.
                        l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.Zero).UseStaticLane(o => o.Roots.Add(
                            new StaticLaneRootOptions { PhysicalPath = Files.Root, Files = new FastStaticFileOptions { ServeUnknownFileTypes = true } }));
                    });
                });
        }

        protected override Task StoppingAsync()
        {
            Assert.Empty(Recorder.Exceptions);
            return Task.CompletedTask;
        }
    }

    [Theory]
    [InlineData(true, "")]
    [InlineData(true, "/result")]
    [InlineData(true, "/stock-on-fast")]
    [InlineData(true, "", "bytes=1000-")]
    [InlineData(false, "")]
    [InlineData(false, "/result")]
    [InlineData(false, "/stock-on-fast")]
    [InlineData(false, "", "bytes=1000-")]
    public async Task Http11_body_of_a_file_rewritten_in_place_never_looks_complete(bool sendPath, string prefix, string? range = null)
    {
        (string name, byte[] before, byte[] after) = CreateVersions();
        int offset = range is null ? 0 : 1000;
        string id = Guid.NewGuid().ToString("N");
        using var metric = new InstrumentRecorder(_f.Meters, "fastfiles.file.rewritten_during_send");
        byte[] received = await GetWhileRewritingAsync(sendPath ? _f.Host.Http : _f.Host.HttpCopy, $"{prefix}/{name}?awaitabort=1&id={id}", name, after, range);
        AssertEachByteFromOneVersion(received, before, after, offset);
        await AssertRecordedAsync(id, name, metric);
    }

    [Theory]
    [InlineData(null)]
    [InlineData("bytes=1000-")]
    public async Task Static_lane_body_of_a_file_rewritten_in_place_never_looks_complete(string? range)
    {
        // The lane compares the descriptor with the version just before sending; for a body longer than the final chunk
        // the look before that chunk must still happen, or a rewrite during the send completes a body of two versions.
        (string name, byte[] before, byte[] after) = CreateVersions();
        using var answered = new InstrumentRecorder(_f.Meters, "fastfiles.lane.requests");
        using var written = new InstrumentRecorder(_f.Meters, "fastfiles.lane.bytes");
        using var handedOff = new InstrumentRecorder(_f.Meters, "fastfiles.lane.handoffs");
        byte[] received = await GetWhileRewritingAsync(_f.Lane, $"/{name}", name, after, range);
        AssertEachByteFromOneVersion(received, before, after, range is null ? 0 : 1000);

        // Taken by the lane (its head, then the body from disk by sendfile), not handed to Kestrel; a body cut short
        // counts its head but not as answered.
        Assert.Equal(0, handedOff.Total);
        Assert.InRange(written.Total, 1, 1024);
        Assert.Equal(0, answered.Total);
    }

    [Fact]
    public async Task Without_AddFastFiles_a_rewrite_during_send_is_counted_on_the_apps_meter()
    {
        (string name, byte[] before, byte[] after) = CreateVersions();
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l => l.Protocols = HttpProtocols.Http1));
        WebApplication app = builder.Build();
        app.MapGet("/result/{name}", (string name) => FastResults.PhysicalFile(_f.Files.PathOf(name)));
        Uri address = (await CodeEndpoints.StartAsync(app)).Single();
        await using (app)
        {
            using var metric = new InstrumentRecorder(app.Services.GetRequiredService<IMeterFactory>(), "fastfiles.file.rewritten_during_send");
            byte[] received = await GetWhileRewritingAsync(address, $"/result/{name}", name, after, range: null);
            AssertEachByteFromOneVersion(received, before, after, 0);
            Assert.Equal(1, await Poll.UntilAsync(() => metric.Total, 1));
            await app.StopAsync();
        }
    }

    /// <summary>
    /// GETs <paramref name="target"/> (whole, or the range <c>bytes=1000-</c>) on a keep-alive connection with a 16 KiB
    /// receive buffer, rewrites the file in place once 1 MiB has arrived, reads on, and asserts the body never looked
    /// complete: the connection ended before Content-Length bytes. Returns the bytes received.
    /// </summary>
    private async Task<byte[]> GetWhileRewritingAsync(Uri endpoint, string target, string name, byte[] after, string? range)
    {
        int expected = Length - (range is null ? 0 : 1000);
        var received = new MemoryStream();
        bool closed;
        using (Socket socket = await RawHttp.ConnectAsync(endpoint, receiveBufferSize: 16 * 1024))
        {
            // Keep-alive: a complete-looking response would leave the connection open.
            string rangeHeader = range is null ? string.Empty : $"Range: {range}\r\n";
            await socket.SendAsync(Encoding.ASCII.GetBytes($"GET {target} HTTP/1.1\r\nHost: x\r\n{rangeHeader}\r\n"));
            using var stream = new NetworkStream(socket, ownsSocket: false);
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
            Assert.Equal(range is null ? 200 : 206, status);
            Assert.Equal(expected.ToString(CultureInfo.InvariantCulture), headers["Content-Length"]);
            received.Write(leftover);

            // The reader stops after 1 MiB: with a 16 KiB receive buffer the server is held back a few MiB in at most.
            await ReadUntilAsync(stream, received, ReadBeforeRewrite, timeout.Token);
            Rewrite(name, after);
            closed = await ReadUntilAsync(stream, received, expected, timeout.Token);
        }

        Assert.True(closed && received.Length < expected, $"received {received.Length} of {expected} bytes, connection closed: {closed}");
        return received.ToArray();
    }

    [Theory]
    [InlineData("")]
    [InlineData("/result")]
    [InlineData("/stock-on-fast")]
    public async Task Http2_body_of_a_file_rewritten_in_place_is_reset(string prefix)
    {
        (string name, byte[] before, byte[] after) = CreateVersions();
        string id = Guid.NewGuid().ToString("N");
        using var metric = new InstrumentRecorder(_f.Meters, "fastfiles.file.rewritten_during_send");
        var received = new MemoryStream();
        bool reset = false, ended = false;
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        // The stream's flow-control window is 1 MiB: the server stops there until the client opens it further.
        await using (RawHttp2Client client = await RawHttp2Client.ConnectAsync(_f.Host.Https, initialWindowSize: ReadBeforeRewrite, connectionWindowIncrement: int.MaxValue - 65535))
        {
            await client.SendGetAsync(1, $"{prefix}/{name}?awaitabort=1&id={id}");
            bool rewritten = false;
            while (!reset && !ended)
            {
                if (await client.ReadFrameAsync(timeout.Token) is not { } frame)
                {
                    break;
                }

                if (frame.StreamId != 1)
                {
                    continue;
                }

                if (frame.Type == RawHttp2Client.RstStream)
                {
                    reset = true;
                }
                else if (frame.Type == RawHttp2Client.Data)
                {
                    received.Write(frame.Payload);
                    ended = frame.EndStream;
                }
                else if (frame.Type == RawHttp2Client.Headers)
                {
                    ended = frame.EndStream;
                }

                if (!rewritten && received.Length == ReadBeforeRewrite)
                {
                    rewritten = true;
                    Rewrite(name, after);
                    await client.SendWindowUpdateAsync(1, Length);
                }
            }
        }

        Assert.True(reset && !ended && received.Length < Length, $"received {received.Length} of {Length} bytes, reset: {reset}, ended: {ended}");
        AssertEachByteFromOneVersion(received.ToArray(), before, after, 0);
        await AssertRecordedAsync(id, name, metric);
    }

    [Fact]
    public async Task A_file_replaced_by_rename_still_completes_with_the_old_version()
    {
        // The open descriptor keeps the old inode: its bytes and the headers agree, so nothing is aborted.
        (string name, byte[] before, byte[] after) = CreateVersions();
        var received = new MemoryStream();
        using (Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 16 * 1024))
        {
            await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /{name} HTTP/1.1\r\nHost: x\r\n\r\n"));
            using var stream = new NetworkStream(socket, ownsSocket: false);
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            (int status, _, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
            Assert.Equal(200, status);
            received.Write(leftover);
            await ReadUntilAsync(stream, received, ReadBeforeRewrite, timeout.Token);
            string replacement = _f.Files.PathOf(name + ".new");
            await File.WriteAllBytesAsync(replacement, after);
            File.Move(replacement, _f.Files.PathOf(name), overwrite: true);
            await ReadUntilAsync(stream, received, Length, timeout.Token);
        }

        Assert.Equal(TestFiles.Sha256(before), TestFiles.Sha256(received.ToArray()));
    }

    [Fact]
    public async Task A_file_written_just_now_is_copied_and_one_at_rest_goes_out_with_sendfile()
    {
        // sendfile's bytes are read when they leave, after any check; a file still being written is copied, so a rewrite
        // is caught before the last bytes leave.
        (string name, byte[] before, _) = CreateVersions();
        using var recent = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.fallbacks", new("fastfiles.send_path.reason", "recently_modified"));
        using var sendfile = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));

        // Written just now, as the request sees it: writing 16 MiB on a loaded machine can take a good part of the 1 s
        // window, so the time is set (half a second ahead, still within the window) right before the request.
        File.SetLastWriteTimeUtc(_f.Files.PathOf(name), DateTime.UtcNow.AddMilliseconds(500));
        RawResponse fresh = await RawHttp.SendAsync(_f.SendPathDefaults, $"/{name}");
        Assert.Equal(TestFiles.Sha256(before), TestFiles.Sha256(fresh.Body));
        Assert.Equal(1, recent.Total);
        Assert.Equal(0, sendfile.Total);

        File.SetLastWriteTimeUtc(_f.Files.PathOf(name), DateTime.UtcNow.AddHours(-1));
        RawResponse atRest = await RawHttp.SendAsync(_f.SendPathDefaults, $"/{name}");
        Assert.Equal(TestFiles.Sha256(before), TestFiles.Sha256(atRest.Body));
        Assert.Equal(1, recent.Total);
        Assert.Equal(Length, sendfile.Total);
    }

    private (string Name, byte[] Before, byte[] After) CreateVersions()
    {
        string name = $"rewritten-{Guid.NewGuid():N}.bin";
        byte[] before = _f.Files.Create(name, Length, seed: 1);
        var after = new byte[Length];
        new Random(2).NextBytes(after);
        return (name, before, after);
    }

    // Same inode, same length, other bytes: only the modification time tells the versions apart.
    private void Rewrite(string name, byte[] bytes)
    {
        using var writer = new FileStream(_f.Files.PathOf(name), FileMode.Open, FileAccess.Write, FileShare.ReadWrite | FileShare.Delete);
        writer.Write(bytes);
    }

    /// <summary>Reads until <paramref name="total"/> bytes arrived (false) or the connection ended (true).</summary>
    private static async Task<bool> ReadUntilAsync(Stream stream, MemoryStream into, long total, CancellationToken cancellationToken)
    {
        var chunk = new byte[64 * 1024];
        while (into.Length < total)
        {
            int read;
            try
            {
                read = await stream.ReadAsync(chunk.AsMemory(0, (int)Math.Min(chunk.Length, total - into.Length)), cancellationToken);
            }
            catch (IOException)
            {
                return true;
            }

            if (read == 0)
            {
                return true;
            }

            into.Write(chunk, 0, read);
        }

        return false;
    }

    private static void AssertEachByteFromOneVersion(byte[] body, byte[] before, byte[] after, int offset)
    {
        for (int i = 0; i < body.Length; i++)
        {
            byte b = body[i];
            if (b != before[offset + i] && b != after[offset + i])
            {
                Assert.Fail($"byte {offset + i} is in neither version");
            }
        }
    }

    // The server saw the rewrite: the request ended aborted without an exception, one Information event and the metric.
    private async Task AssertRecordedAsync(string id, string name, InstrumentRecorder metric)
    {
        RequestRecord record = await _f.Recorder.WaitAsync(id);
        Assert.Null(record.Exception);
        Assert.True(record.Aborted);
        Assert.Contains(_f.Logs.WithId(FileRewritten), e => e.Level == LogLevel.Information && e.Message.Contains(name, StringComparison.Ordinal));
        Assert.Equal(1, metric.Total);
    }
}
