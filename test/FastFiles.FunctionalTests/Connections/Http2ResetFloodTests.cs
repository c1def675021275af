using System.Buffers.Binary;
using System.Net;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// HTTP/2 rapid reset (CVE-2023-44487) and resets the server makes (CVE-2025-8671) through FastFiles: thousands of
/// streams reset on one connection, over h2c (with and without the send path) and TLS (with and without the output stage
/// and record coalescing), through UseFastFiles (a cached and an uncached file), UseFastSendFile, FastResults and stock
/// UseStaticFiles as the reference. Kestrel counts reset streams whose request work has not ended; every such work must
/// end, so its mitigation sees what it sees with stock, and nothing leaks.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed class Http2ResetFloodTests : IAsyncLifetime
{
    private const int CacheLimit = 256 * 1024;
    private const uint Cancel = 0x8;
    private const uint EnhanceYourCalm = 0xb;
    private const uint RefusedStream = 0x7;
    // The suite's scale (under a minute over the 25 endpoint and path pairs); FASTFILES_RESET_FLOOD_SCALE multiplies
    // every count, to hunt with many more streams.
    private static readonly int Scale =
        int.TryParse(Environment.GetEnvironmentVariable("FASTFILES_RESET_FLOOD_SCALE"), System.Globalization.CultureInfo.InvariantCulture, out int n) && n > 0 ? n : 1;

    private readonly TestFiles _files = new();
    private readonly LogRecorder _logs = new();
    private readonly Dictionary<string, byte[]> _contents = [];
    private WebApplication _app = null!;
    private Uri[] _addresses = null!;
    private int _baseline;
    private int _inFlight;

    public static TheoryData<int, string> EndpointsAndPaths()
    {
        var data = new TheoryData<int, string>();
        foreach (int endpoint in new[] { 0, 1, 2, 3, 4 })
        {
            foreach (string path in new[] { "/stock/big.bin", "/big.bin", "/small.txt", "/stockfast/big.bin", "/fastresult/big.bin" })
            {
                data.Add(endpoint, path);
            }
        }

        return data;
    }

    public async Task InitializeAsync()
    {
        _contents["big.bin"] = _files.Create("big.bin", 8 * 1024 * 1024);
        _contents["small.txt"] = _files.Create("small.txt", 1000);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles(o => o.MaxCachedFileSize = CacheLimit);
        builder.Logging.AddProvider(_logs);
        builder.WebHost.ConfigureKestrel(Http2Endpoints.ListenOnEach);
        _app = builder.Build();

        // Requests whose work has not ended: what Kestrel's rapid-reset limit counts.
        _app.Use(async (context, next) =>
        {
            Interlocked.Increment(ref _inFlight);
            try
            {
                await next(context);
            }
            finally
            {
                Interlocked.Decrement(ref _inFlight);
            }
        });
        _app.Map("/stock", b => b.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true }));
        _app.Map("/stockfast", b =>
        {
            b.UseFastSendFile();
            b.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true });
        });
        _app.Map("/fastresult", b => b.Run(context => FastResults.PhysicalFile(_files.PathOf(context.Request.Path.Value!), "application/octet-stream", null, enableRangeProcessing: true).ExecuteAsync(context)));
        _app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) });
        _addresses = await CodeEndpoints.StartAsync(_app);

        // Every file once through UseFastFiles, so its cache holds the descriptor it keeps for the large one.
        foreach (string name in _contents.Keys)
        {
            await using Flood warm = await Flood.OpenAsync(_addresses[0], 1 << 20);
            Assert.Equal(_contents[name], await warm.GetWholeAsync(1, "/" + name));
        }

        _baseline = OpenFileDescriptors.CountUnder(_files.Root);
    }

    public async Task DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
        _files.Dispose();
    }

    // HEADERS and RST_STREAM pairs as fast as the socket takes them (2,000 per connection), on four connections (two at
    // once; each times the scale): Kestrel may refuse
    // streams, tell the client to calm down or close the connection, as it does for stock; either way every request's work
    // ends and nothing is left behind.
    [Theory]
    [MemberData(nameof(EndpointsAndPaths))]
    public async Task A_flood_of_requests_reset_at_once_leaves_nothing_behind(int endpoint, string path)
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            for (int i = 0; i < 2 * Scale; i++)
            {
                await FloodAsync(endpoint, path);
            }

            await Task.WhenAll(Enumerable.Range(0, 2 * Scale).Select(_ => FloodAsync(endpoint, path)));
            await AssertCleanAsync(endpoint);
        });
    }

    // A client that waits for each response's HEADERS (and the first DATA the window allows, or none with a window of 0)
    // before it resets: the request work is under way, in a body write or waiting for the window, when the reset comes.
    // Twenty at a time, 500 in all (times the scale), each batch's work ended before the next: Kestrel never counts more than twenty, so
    // the connection stays usable, as it does for stock.
    [Theory]
    [MemberData(nameof(EndpointsAndPaths))]
    public async Task Streams_reset_after_their_headers_end_their_work(int endpoint, string path)
    {
        foreach (uint window in new uint[] { 65535, 0 })
        {
            await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
            {
                await using Flood flood = await Flood.OpenAsync(_addresses[endpoint], window);
                await flood.ResetAfterHeadersAsync(path, id => flood.Client.GetFrame(id, path), id => Frame(RawHttp2Client.RstStream, id, Cancel), () => Volatile.Read(ref _inFlight));
                await AssertUsableAsync(flood);
            });
        }

        await AssertCleanAsync(endpoint);
    }

    // Server-made resets: a GET declaring a 5-byte body that ends after 1 byte is a stream error (RFC 9113 8.1.1), which
    // Kestrel answers with RST_STREAM PROTOCOL_ERROR while the response is under way.
    [Theory]
    [MemberData(nameof(EndpointsAndPaths))]
    public async Task Streams_the_server_resets_for_a_short_request_body_end_their_work(int endpoint, string path)
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            await using Flood flood = await Flood.OpenAsync(_addresses[endpoint], 65535);
            await flood.ResetAfterHeadersAsync(path, id => flood.Client.GetFrame(id, path, endStream: false, (28, "5")), id => RawHttp2Client.FrameBytes(RawHttp2Client.Data, 0x1, id, [7]), () => Volatile.Read(ref _inFlight));
            Assert.True(flood.ResetsByServer(0x1) > 0, "no stream was reset with PROTOCOL_ERROR");
            await AssertUsableAsync(flood);
        });
        await AssertCleanAsync(endpoint);
    }

    private static byte[] Frame(byte type, int streamId, uint code)
    {
        byte[] payload = new byte[4];
        BinaryPrimitives.WriteUInt32BigEndian(payload, code);
        return RawHttp2Client.FrameBytes(type, 0, streamId, payload);
    }

    private async Task FloodAsync(int endpoint, string path)
    {
        await using Flood flood = await Flood.OpenAsync(_addresses[endpoint], 65535);
        int id = 1;
        try
        {
            for (int batch = 0; batch < 20 && !flood.Closed; batch++)
            {
                using var frames = new MemoryStream();
                for (int i = 0; i < 100; i++, id += 2)
                {
                    frames.Write(flood.Client.GetFrame(id, path));
                    frames.Write(Frame(RawHttp2Client.RstStream, id, Cancel));
                }

                await flood.Client.SendRawAsync(frames.ToArray());
            }

            await flood.PingAsync();
        }
        catch (IOException)
        {
            // The server closed the connection (Kestrel's limit), as it may for stock too.
        }
    }

    private async Task AssertUsableAsync(Flood flood)
    {
        await flood.PingAsync();
        Assert.False(flood.Closed, "the server closed the connection");
        Assert.Equal(-1, flood.GoAwayCode);
        Assert.Equal(0, flood.ResetsByServer(EnhanceYourCalm) + flood.ResetsByServer(RefusedStream));
        foreach (string name in _contents.Keys)
        {
            Assert.Equal(_contents[name], await flood.GetWholeAsync(flood.NextStreamId, "/" + name));
        }
    }

    // Every request's work ended, descriptors back to what the cache keeps, every send-path block back, the TLS pool sane,
    // nothing of FastFiles' logged at Warning or above, and a new connection on every endpoint served whole (the large
    // file on the endpoint under test, the small one on the others).
    private async Task AssertCleanAsync(int endpoint)
    {
        Assert.Equal(0, await Poll.UntilAsync(() => Volatile.Read(ref _inFlight), 0));
        // Not Poll.UntilAsync: a count above the baseline is not final here, it must come down.
        Assert.Equal(_baseline, await Poll.EventuallyAsync(() => Task.FromResult(OpenFileDescriptors.CountUnder(_files.Root)), n => n == _baseline, TimeSpan.FromSeconds(30)));
        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
        LeakChecks.AssertTlsPoolHasNoDuplicates();
        string[] ours = _logs.AtLeast(LogLevel.Warning).Where(l => l.Contains(" FastFiles", StringComparison.Ordinal)).ToArray();
        Assert.True(ours.Length == 0, string.Join("\n", ours));
        for (int i = 0; i < _addresses.Length; i++)
        {
            string name = i == endpoint ? "big.bin" : "small.txt";
            await using Flood flood = await Flood.OpenAsync(_addresses[i], 1 << 20);
            Assert.Equal(_contents[name], await flood.GetWholeAsync(1, "/" + name));
        }
    }

    /// <summary>One connection read by a loop of its own that counts what the server sends.</summary>
    private sealed class Flood : IAsyncDisposable
    {
        private readonly Dictionary<uint, int> _resets = [];
        private readonly Task _reading;
        private readonly object _lock = new();
        private TaskCompletionSource _pong = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private int _headers;
        private int _watched;
        private MemoryStream? _body;
        private TaskCompletionSource? _bodyDone;

        private Flood(RawHttp2Client client)
        {
            Client = client;
            _reading = Task.Run(ReadLoopAsync);
        }

        public RawHttp2Client Client { get; }

        public volatile bool Closed;

        public int GoAwayCode { get; private set; } = -1;

        public int NextStreamId { get; private set; } = 1;

        public static async Task<Flood> OpenAsync(Uri address, uint initialWindowSize)
            => new(await RawHttp2Client.ConnectAsync(address, initialWindowSize, connectionWindowIncrement: 1u << 30));

        public int ResetsByServer(uint code)
        {
            lock (_lock)
            {
                return _resets.GetValueOrDefault(code);
            }
        }

        /// <summary>A PING and its ACK (or the end of the connection): every frame sent before it has been processed.</summary>
        public async Task PingAsync()
        {
            TaskCompletionSource pong;
            lock (_lock)
            {
                pong = _pong = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            }

            if (!Closed)
            {
                try
                {
                    await Client.SendPingAsync(1);
                }
                catch (IOException)
                {
                }
            }

            await Task.WhenAny(pong.Task, _reading).WaitAsync(TimeSpan.FromSeconds(60));
        }

        /// <summary>
        /// 25 batches of 20 requests (times the scale): each batch's HEADERS sent, its 20 responses' HEADERS awaited, then for each stream
        /// the frames that end it, then a PING, and the batch's request work ended (<paramref name="inFlight"/> back to 0).
        /// </summary>
        public async Task ResetAfterHeadersAsync(string path, Func<int, byte[]> request, Func<int, byte[]> end, Func<int> inFlight)
        {
            int id = NextStreamId;
            for (int batch = 0; batch < 25 * Scale; batch++)
            {
                int first = id;
                int expected = Volatile.Read(ref _headers) + 20;
                using var frames = new MemoryStream();
                for (int i = 0; i < 20; i++, id += 2)
                {
                    frames.Write(request(id));
                }

                await Client.SendRawAsync(frames.ToArray());
                Assert.Equal(expected, await Poll.UntilAsync(() => Closed ? -1 : Volatile.Read(ref _headers), expected));
                frames.SetLength(0);
                for (int s = first; s < id; s += 2)
                {
                    frames.Write(end(s));
                }

                await Client.SendRawAsync(frames.ToArray());
                await PingAsync();
                Assert.True(await Poll.UntilAsync(() => inFlight(), 0) == 0, $"{path}: request work still under way after batch {batch}'s resets");
            }

            NextStreamId = id;
        }

        public async Task<byte[]> GetWholeAsync(int streamId, string path)
        {
            var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            lock (_lock)
            {
                _watched = streamId;
                _body = new MemoryStream();
                _bodyDone = done;
            }

            NextStreamId = streamId + 2;
            await Client.SendGetAsync(streamId, path);
            // A window for a connection opened with SETTINGS_INITIAL_WINDOW_SIZE 0 (more than enough otherwise).
            await Client.SendWindowUpdateAsync(streamId, 1 << 20);
            await Task.WhenAny(done.Task, _reading).WaitAsync(TimeSpan.FromSeconds(60));
            Assert.True(done.Task.IsCompleted, $"{path}: the connection ended before the response did");
            lock (_lock)
            {
                return _body!.ToArray();
            }
        }

        private async Task ReadLoopAsync()
        {
            try
            {
                while (await Client.ReadFrameAsync() is { } frame)
                {
                    switch (frame.Type)
                    {
                        case RawHttp2Client.Settings when (frame.Flags & 0x1) == 0:
                            await Client.SendSettingsAckAsync();
                            break;
                        case RawHttp2Client.Headers:
                            Interlocked.Increment(ref _headers);
                            if (frame.EndStream)
                            {
                                Watched(frame, []);
                            }

                            break;
                        case RawHttp2Client.Data:
                            if (frame.Payload.Length > 0)
                            {
                                await Client.SendWindowUpdateAsync(0, (uint)frame.Payload.Length);
                            }

                            if (Watched(frame, frame.Payload) && frame.Payload.Length > 0 && !frame.EndStream)
                            {
                                await Client.SendWindowUpdateAsync(frame.StreamId, (uint)frame.Payload.Length);
                            }

                            break;
                        case RawHttp2Client.RstStream:
                            lock (_lock)
                            {
                                uint code = BinaryPrimitives.ReadUInt32BigEndian(frame.Payload);
                                _resets[code] = _resets.GetValueOrDefault(code) + 1;
                            }

                            break;
                        case RawHttp2Client.GoAway:
                            GoAwayCode = (int)BinaryPrimitives.ReadUInt32BigEndian(frame.Payload.AsSpan(4));
                            break;
                        case RawHttp2Client.Ping when (frame.Flags & 0x1) != 0:
                            lock (_lock)
                            {
                                _pong.TrySetResult();
                            }

                            break;
                    }
                }
            }
            catch (Exception ex) when (ex is IOException or ObjectDisposedException)
            {
            }
            finally
            {
                Closed = true;
            }
        }

        private bool Watched(RawHttp2Client.Frame frame, byte[] payload)
        {
            lock (_lock)
            {
                if (frame.StreamId != _watched || _body is null)
                {
                    return false;
                }

                _body.Write(payload);
                if (frame.EndStream)
                {
                    _bodyDone!.TrySetResult();
                }

                return true;
            }
        }

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync();
            await _reading;
        }
    }
}
