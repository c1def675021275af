using System.Collections.Concurrent;
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
/// HTTP/2 clients that reset streams (mid-body, before any DATA, on a 304/416/HEAD, with no flow-control window, on a
/// 100 MiB body) or send GOAWAY, over h2c (with and without the send path) and over TLS (with and without the output
/// stage and record coalescing), through UseFastFiles, UseFastSendFile under UseStaticFiles and FastResults: later
/// streams on the same connection get whole, correct files, and nothing leaks or is logged as an error.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed class Http2StreamResetTests : IAsyncLifetime
{
    private const int CacheLimit = 256 * 1024;
    private const int BigLength = 8 * 1024 * 1024;
    private readonly TestFiles _files = new();
    private readonly LogRecorder _logs = new();
    private readonly Dictionary<string, byte[]> _contents = [];
    private WebApplication _app = null!;
    private Uri[] _addresses = null!;
    private Dictionary<string, int> _baseline = null!;

    public static TheoryData<int, string> EndpointsAndPaths()
    {
        var data = new TheoryData<int, string>();
        foreach (int endpoint in new[] { 0, 1, 2, 3, 4 })
        {
            foreach (string prefix in new[] { "", "/stockfast", "/fastresult" })
            {
                data.Add(endpoint, prefix);
            }
        }

        return data;
    }

    public async Task InitializeAsync()
    {
        _contents["/big.bin"] = _files.Create("big.bin", BigLength);
        _contents["/medium.bin"] = _files.Create("medium.bin", 200 * 1024);
        _contents["/small.txt"] = _files.Create("small.txt", 1000);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles(o => o.MaxCachedFileSize = CacheLimit);
        builder.Logging.AddProvider(_logs);
        builder.WebHost.ConfigureKestrel(Http2Endpoints.ListenOnEach);
        _app = builder.Build();
        FastStaticFileOptions Files() => new() { FileProvider = new PhysicalFileProvider(_files.Root) };
        _app.Map("/stock", b => b.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true }));
        _app.Map("/stockfast", b =>
        {
            b.UseFastSendFile();
            b.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true });
        });
        _app.Map("/fastresult", b => b.Run(context => FastResults.PhysicalFile(_files.PathOf(context.Request.Path.Value!), "application/octet-stream", null, enableRangeProcessing: true).ExecuteAsync(context)));
        _app.UseFastFiles(Files());
        _addresses = await CodeEndpoints.StartAsync(_app);

        // Every file once through every path, so the file caches hold what they keep: the descriptors a test must come back to.
        await using Session warm = await Session.OpenAsync(_addresses[0], 65535);
        int id = 1;
        foreach (string prefix in new[] { "", "/stockfast", "/fastresult" })
        {
            foreach (string name in _contents.Keys)
            {
                await AssertWholeAsync(warm, id, prefix, name);
                id += 2;
            }
        }

        _baseline = Count(OpenFileDescriptors.TargetsUnder(_files.Root));
    }

    public async Task DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
        _files.Dispose();
    }

    [Theory]
    [MemberData(nameof(EndpointsAndPaths))]
    public async Task A_stream_reset_mid_body_leaves_later_streams_on_the_connection_whole(int endpoint, string prefix)
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            for (int i = 0; i < 8; i++)
            {
                await using Session session = await Session.OpenAsync(_addresses[endpoint], (uint)(i % 2 == 0 ? 65535 : 1 << 20));
                // A whole body, a single range and a multipart body (UseFastFiles, FastResults), each reset part-way.
                Session.Response first = (i % 3) switch
                {
                    0 => session.Get(1, prefix + "/big.bin"),
                    1 => session.Send(1, "GET", prefix + "/big.bin", (50, "bytes=1000-")),
                    _ => session.Send(1, "GET", prefix + "/big.bin", (50, "bytes=0-100000,200000-3000000,5000000-8000000")),
                };
                await first.WaitForBytesAsync((i % 4) * 100_000 + 1);
                await session.ResetAsync(1);
                await AssertWholeAsync(session, 3, prefix, "/big.bin");
                Task[] more = [AssertWholeAsync(session, 5, prefix, "/medium.bin"), AssertWholeAsync(session, 7, prefix, "/small.txt"), AssertWholeAsync(session, 9, prefix, "/big.bin")];
                await Task.WhenAll(more);
            }

            await AssertCleanAsync();
        });
    }

    [Theory]
    [MemberData(nameof(EndpointsAndPaths))]
    public async Task Many_streams_reset_at_once_while_others_finish(int endpoint, string prefix)
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            for (int round = 0; round < 3; round++)
            {
                await using Session session = await Session.OpenAsync(_addresses[endpoint], 1 << 20);
                var kept = new List<(Session.Response Response, string Name)>();
                var dropped = new List<Session.Response>();
                for (int s = 0; s < 24; s++)
                {
                    string name = (s % 3) switch { 0 => "/big.bin", 1 => "/medium.bin", _ => "/small.txt" };
                    Session.Response response = session.Get(1 + (2 * s), prefix + name);
                    if (s % 2 == 0)
                    {
                        dropped.Add(response);
                    }
                    else
                    {
                        kept.Add((response, name));
                    }
                }

                await dropped[0].WaitForBytesAsync(1);
                await Task.WhenAll(dropped.Select(d => session.ResetAsync(d.StreamId)));
                foreach ((Session.Response response, string name) in kept)
                {
                    await AssertWholeAsync(response, name);
                }

                await AssertWholeAsync(session, 101, prefix, "/big.bin");
            }

            await AssertCleanAsync();
        });
    }

    [Theory]
    [MemberData(nameof(EndpointsAndPaths))]
    public async Task Streams_reset_with_no_window_after_headers_leak_nothing(int endpoint, string prefix)
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            for (int i = 0; i < 6; i++)
            {
                // SETTINGS_INITIAL_WINDOW_SIZE 0: the server can send HEADERS but no DATA until a stream's window opens.
                await using Session session = await Session.OpenAsync(_addresses[endpoint], 0);
                Session.Response[] stalled = new[] { "/big.bin", "/medium.bin", "/small.txt" }.Select((name, n) => session.Get(1 + (2 * n), prefix + name, openWindow: false)).ToArray();
                foreach (Session.Response response in stalled)
                {
                    await response.Headers.WaitAsync(TimeSpan.FromSeconds(30));
                    Assert.Equal(0, response.Received);
                }

                if (i % 2 == 0)
                {
                    // Let the bodies wait a while on the window (files open, reads parked) before the resets.
                    await Task.Delay(100);
                }

                foreach (Session.Response response in stalled)
                {
                    await session.ResetAsync(response.StreamId);
                }

                await AssertWholeAsync(session, 7, prefix, "/big.bin");
                await AssertWholeAsync(session, 9, prefix, "/small.txt");
            }

            await AssertCleanAsync();
        });
    }

    [Theory]
    [MemberData(nameof(EndpointsAndPaths))]
    public async Task Streams_reset_while_the_connection_window_is_shut_leak_nothing(int endpoint, string prefix)
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            for (int i = 0; i < 4; i++)
            {
                // Stream windows open, the connection's spent after its first 65,535 bytes: every body waits on it.
                await using Session session = await Session.OpenAsync(_addresses[endpoint], 1 << 20, connectionWindowShut: true);
                Session.Response[] stalled = Enumerable.Range(0, 4).Select(n => session.Get(1 + (2 * n), prefix + (n % 2 == 0 ? "/big.bin" : "/medium.bin"))).ToArray();
                await Poll.UntilAsync(() => stalled.Sum(r => r.Received), 65535);
                if (i % 2 == 0)
                {
                    await Task.Delay(100);
                }

                foreach (Session.Response response in stalled)
                {
                    await session.ResetAsync(response.StreamId);
                }

                session.ConnectionWindowShut = false;
                await session.Client.SendWindowUpdateAsync(0, 1 << 30);
                await AssertWholeAsync(session, 9, prefix, "/big.bin");
                await AssertWholeAsync(session, 11, prefix, "/medium.bin");
            }

            await AssertCleanAsync();
        });
    }

    [Theory]
    [MemberData(nameof(EndpointsAndPaths))]
    public async Task Resets_on_not_modified_unsatisfiable_and_head_leave_the_connection_whole(int endpoint, string prefix)
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            await using Session session = await Session.OpenAsync(_addresses[endpoint], 65535);
            int id = 1;
            foreach (string name in _contents.Keys)
            {
                for (int resetAfter = 0; resetAfter < 2; resetAfter++)
                {
                    Session.Response[] responses =
                    [
                        session.Send(id, "GET", prefix + name, (41, "*")),                       // if-none-match: * -> 304
                        session.Send(id + 2, "GET", prefix + name, (50, "bytes=99999999999-")), // range -> 416
                        session.Send(id + 4, "HEAD", prefix + name),
                    ];
                    if (resetAfter == 1)
                    {
                        await Task.WhenAll(responses.Select(r => r.Headers.WaitAsync(TimeSpan.FromSeconds(30))));
                        Assert.Equal([304, 416, 200], responses.Select(r => r.Status));
                    }

                    foreach (Session.Response response in responses)
                    {
                        await session.ResetAsync(response.StreamId);
                    }

                    await AssertWholeAsync(session, id + 6, prefix, name);
                    id += 8;
                }
            }

            await AssertCleanAsync();
        });
    }

    // After a client's GOAWAY, Kestrel may close the connection once the apps are done, with queued DATA still unsent:
    // stock UseStaticFiles on h2c loses a body's tail this way too. So a stream either ends whole with END_STREAM or is
    // cut short, its bytes a prefix of the file, never padded or mixed; and nothing leaks.
    [Theory]
    [MemberData(nameof(EndpointsAndPaths))]
    [InlineData(0, "/stock")]
    [InlineData(4, "/stock")]
    public async Task A_client_goaway_mid_body_ends_open_streams_whole_or_short(int endpoint, string prefix)
    {
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            for (int i = 0; i < 4; i++)
            {
                await using Session session = await Session.OpenAsync(_addresses[endpoint], 1 << 20);
                Session.Response big = session.Get(1, prefix + "/big.bin");
                Session.Response medium = session.Get(3, prefix + "/medium.bin");
                await big.WaitForBytesAsync(1 + (i * 100_000));
                await session.Client.SendGoAwayAsync(3);
                foreach ((Session.Response response, string name) in new[] { (big, "/big.bin"), (medium, "/medium.bin") })
                {
                    await response.Done.WaitAsync(TimeSpan.FromSeconds(60));
                    byte[] body = response.Body;
                    byte[] expected = _contents[name];
                    Assert.True(body.Length <= expected.Length && expected.AsSpan(0, body.Length).SequenceEqual(body), $"stream {response.StreamId}: not a prefix of {name}");
                    Assert.True(!response.EndedByServer || body.Length == expected.Length, $"stream {response.StreamId}: END_STREAM after {body.Length} bytes of {expected.Length}");
                }
            }

            await using (Session after = await Session.OpenAsync(_addresses[endpoint], 1 << 20))
            {
                await AssertWholeAsync(after, 1, prefix, "/big.bin");
            }

            await AssertCleanAsync();
        });
    }

    [Theory]
    [InlineData(0, "")]
    [InlineData(1, "")]
    [InlineData(1, "/stockfast")]
    [InlineData(0, "/fastresult")]
    [InlineData(2, "")]
    [InlineData(3, "/stockfast")]
    public async Task A_100_MiB_body_reset_repeatedly_on_one_connection_leaks_nothing(int endpoint, string prefix)
    {
        _contents["/huge.bin"] = _files.Create("huge.bin", 100 * 1024 * 1024);
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            await using Session session = await Session.OpenAsync(_addresses[endpoint], 1 << 20);
            int id = 1;
            for (int i = 0; i < 8; i++)
            {
                Session.Response response = session.Get(id, prefix + "/huge.bin");
                await response.WaitForBytesAsync(1 + (i * 7 * 1024 * 1024));
                await session.ResetAsync(id);
                id += 2;
            }

            await AssertWholeAsync(session, id, prefix, "/huge.bin");
            await AssertWholeAsync(session, id + 2, prefix, "/small.txt");
        });

        _contents.Remove("/huge.bin");
        await AssertCleanAsync(allowCached: "huge.bin");
    }

    private async Task AssertWholeAsync(Session session, int streamId, string prefix, string name)
        => await AssertWholeAsync(session.Get(streamId, prefix + name), name);

    private async Task AssertWholeAsync(Session.Response response, string name)
    {
        await response.Done.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.True(response.Status == 200, $"stream {response.StreamId} {name}: status {response.Status}");
        Assert.False(response.WasReset, $"stream {response.StreamId} {name}: reset by the server after {response.Received} bytes");
        byte[] expected = _contents[name];
        byte[] body = response.Body;
        Assert.True(expected.AsSpan().SequenceEqual(body), $"stream {response.StreamId} {name}: {body.Length} bytes of {expected.Length}, or other bytes");
    }

    // Descriptors back to what the file caches held after the warm-up, every send-path block back, the TLS pool sane,
    // nothing logged at Error, and a new connection on every endpoint served whole (the cached body: each test fetches the
    // large one whole itself after its resets or GOAWAYs).
    private async Task AssertCleanAsync(string? allowCached = null)
    {
        DateTime deadline = DateTime.UtcNow + TimeSpan.FromSeconds(10);
        Dictionary<string, int> now;
        while (!WithinBaseline(now = Count(OpenFileDescriptors.TargetsUnder(_files.Root)), allowCached) && DateTime.UtcNow < deadline)
        {
            await Task.Delay(50);
        }

        Assert.True(WithinBaseline(now, allowCached), "open: " + string.Join(", ", now.Select(p => $"{p.Key} x{p.Value}")) + "; baseline: " + string.Join(", ", _baseline.Select(p => $"{p.Key} x{p.Value}")));
        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
        LeakChecks.AssertTlsPoolHasNoDuplicates();
        _logs.AssertNoErrors();
        for (int e = 0; e < _addresses.Length; e++)
        {
            await using Session session = await Session.OpenAsync(_addresses[e], 1 << 20);
            await AssertWholeAsync(session, 1, "", "/medium.bin");
        }
    }

    private bool WithinBaseline(Dictionary<string, int> now, string? allowCached)
        => now.All(p => p.Value <= _baseline.GetValueOrDefault(p.Key)
            || (allowCached is not null && p.Key.EndsWith(allowCached, StringComparison.Ordinal) && p.Value <= 3));

    private static Dictionary<string, int> Count(IReadOnlyList<string> targets)
        => targets.GroupBy(t => t, StringComparer.Ordinal).ToDictionary(g => g.Key, g => g.Count(), StringComparer.Ordinal);

    /// <summary>
    /// One HTTP/2 connection read by a loop of its own: responses collected per stream, SETTINGS acknowledged, the
    /// connection window kept open, and each stream's window opened as its DATA arrives unless the test holds it shut.
    /// </summary>
    private sealed class Session : IAsyncDisposable
    {
        private readonly ConcurrentDictionary<int, Response> _streams = new();
        private readonly Task _reading;

        private readonly uint _initialWindowSize;

        private Session(RawHttp2Client client, uint initialWindowSize, bool connectionWindowShut)
        {
            Client = client;
            _initialWindowSize = initialWindowSize;
            ConnectionWindowShut = connectionWindowShut;
            _reading = Task.Run(ReadLoopAsync);
        }

        public RawHttp2Client Client { get; }

        /// <summary>Whether the connection's window stays at what the server used (the default 65,535) until a test opens it.</summary>
        public volatile bool ConnectionWindowShut;

        public static async Task<Session> OpenAsync(Uri address, uint initialWindowSize, bool connectionWindowShut = false)
            => new(await RawHttp2Client.ConnectAsync(address, initialWindowSize, connectionWindowIncrement: connectionWindowShut ? 0 : 1u << 30, receiveBufferSize: 64 * 1024), initialWindowSize, connectionWindowShut);

        public Response Get(int streamId, string path, bool openWindow = true) => Send(streamId, "GET", path, openWindow, []);

        public Response Send(int streamId, string method, string path, params (int NameIndex, string Value)[] headers)
            => Send(streamId, method, path, true, headers);

        private Response Send(int streamId, string method, string path, bool openWindow, (int NameIndex, string Value)[] headers)
        {
            var response = new Response(streamId, openWindow);
            Assert.True(_streams.TryAdd(streamId, response));
            response.Sent = SendAsync(streamId, method, path, openWindow, headers);
            return response;
        }

        private async Task SendAsync(int streamId, string method, string path, bool openWindow, (int NameIndex, string Value)[] headers)
        {
            await Client.SendRequestAsync(streamId, method, path, headers);
            if (openWindow && _initialWindowSize == 0)
            {
                await Client.SendWindowUpdateAsync(streamId, 1 << 20);
            }
        }

        public async Task ResetAsync(int streamId)
        {
            Response response = _streams[streamId];
            await response.Sent;
            response.ResetByClient = true;
            await Client.SendRstStreamAsync(streamId);
            response.Finish();
        }

        private async Task ReadLoopAsync()
        {
            try
            {
                while (await Client.ReadFrameAsync() is { } frame)
                {
                    Response? response = frame.StreamId == 0 ? null : _streams.GetValueOrDefault(frame.StreamId);
                    switch (frame.Type)
                    {
                        case RawHttp2Client.Settings when (frame.Flags & 0x1) == 0:
                            await Client.SendSettingsAckAsync();
                            break;
                        case RawHttp2Client.Headers:
                            // Every block goes through the decoder, the reset streams' too: they update its dynamic table.
                            int status = Client.DecodeStatus(frame.Payload);
                            response?.OnHeaders(frame, status);
                            break;
                        case RawHttp2Client.Data:
                            if (frame.Payload.Length > 0 && !ConnectionWindowShut)
                            {
                                await Client.SendWindowUpdateAsync(0, (uint)frame.Payload.Length);
                            }

                            if (response is not null)
                            {
                                if (frame.Payload.Length > 0 && response.OpenWindow && !response.ResetByClient && !frame.EndStream)
                                {
                                    await Client.SendWindowUpdateAsync(frame.StreamId, (uint)frame.Payload.Length);
                                }

                                response.OnData(frame);
                            }

                            break;
                        case RawHttp2Client.RstStream when response is not null:
                            response.WasReset = true;
                            response.Finish();
                            break;
                    }
                }
            }
            catch (Exception ex) when (ex is IOException or ObjectDisposedException)
            {
            }
            finally
            {
                foreach (Response response in _streams.Values)
                {
                    response.Finish();
                }
            }
        }

        public async ValueTask DisposeAsync()
        {
            await Client.DisposeAsync();
            await _reading;
        }

        internal sealed class Response(int streamId, bool openWindow)
        {
            private readonly MemoryStream _body = new();
            private readonly TaskCompletionSource _headers = new(TaskCreationOptions.RunContinuationsAsynchronously);
            private readonly TaskCompletionSource _done = new(TaskCreationOptions.RunContinuationsAsynchronously);
            private readonly object _lock = new();
            private TaskCompletionSource? _bytes;
            private long _wanted;

            public int StreamId { get; } = streamId;

            public bool OpenWindow { get; } = openWindow;

            public Task Sent { get; set; } = Task.CompletedTask;

            public volatile bool ResetByClient;

            public volatile bool WasReset;

            public volatile bool EndedByServer;

            public int Status { get; private set; }

            public Task Headers => _headers.Task;

            public Task Done => _done.Task;

            public long Received
            {
                get
                {
                    lock (_lock)
                    {
                        return _body.Length;
                    }
                }
            }

            public byte[] Body
            {
                get
                {
                    lock (_lock)
                    {
                        return _body.ToArray();
                    }
                }
            }

            public void OnHeaders(RawHttp2Client.Frame frame, int status)
            {
                if (Status == 0)
                {
                    Status = status;
                    _headers.TrySetResult();
                }

                if (frame.EndStream)
                {
                    EndedByServer = true;
                    Finish();
                }
            }

            public void OnData(RawHttp2Client.Frame frame)
            {
                lock (_lock)
                {
                    if (!ResetByClient)
                    {
                        _body.Write(frame.Payload);
                    }

                    if (_bytes is not null && _body.Length >= _wanted)
                    {
                        _bytes.TrySetResult();
                    }
                }

                if (frame.EndStream)
                {
                    EndedByServer = true;
                    Finish();
                }
            }

            /// <summary>Waits until <paramref name="count"/> body bytes arrived (or the stream ended first).</summary>
            public Task WaitForBytesAsync(long count)
            {
                lock (_lock)
                {
                    if (_body.Length >= count || _done.Task.IsCompleted)
                    {
                        return Task.CompletedTask;
                    }

                    _wanted = count;
                    _bytes = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                    return Task.WhenAny(_bytes.Task, _done.Task).WaitAsync(TimeSpan.FromSeconds(60));
                }
            }

            public void Finish()
            {
                _headers.TrySetResult();
                _done.TrySetResult();
            }
        }
    }
}
