using System.Buffers.Text;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography;
using System.Text;
using FastFiles.FunctionalTests.Connections;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// A request that waits for a content-hash tag (an entity-tag condition, a fingerprinted URL) and whose client leaves,
/// or whose server stops, meanwhile: it ends without an error, the file being hashed is closed (at once when the hash
/// was this request's own, when it ends otherwise), other waiters and later hashes are not disturbed.
/// </summary>
public sealed class ContentHashAbortTests : IAsyncLifetime
{
    // Sparse: no disk used, minutes to hash.
    private const long Huge = 16L * 1024 * 1024 * 1024;

    // Sparse too: hashed in a few seconds, a window the tests below must not miss while other suites load the machine.
    private const long Medium = 2L * 1024 * 1024 * 1024;

    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(30);
    private readonly TestFiles _files = new();
    private readonly LogRecorder _logs = new();
    private TestHost? _host;

    public Task InitializeAsync() => Task.CompletedTask;

    public async Task DisposeAsync()
    {
        if (_host is not null)
        {
            await _host.DisposeAsync();
        }

        await ResponseHeaders.AssertNoOpenFilesUnderAsync(_files.Root);
        _files.Dispose();
    }

    private void Sparse(string name, long length)
    {
        using FileStream file = File.Create(_files.PathOf(name));
        file.SetLength(length);
    }

    // The tag of `length` zero bytes, as any tool computes it.
    private static string ZerosTag(long length)
    {
        using var sha = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        byte[] zeros = new byte[1024 * 1024];
        for (long done = 0; done < length; done += zeros.Length)
        {
            sha.AppendData(zeros, 0, (int)Math.Min(zeros.Length, length - done));
        }

        return "\"" + Base64Url.EncodeToString(sha.GetHashAndReset().AsSpan(0, 16)) + "\"";
    }

    private async Task<TestHost> StartAsync(bool fileCache, TimeSpan? shutdownTimeout = null)
    {
        _host = await TestHost.StartAsync(
            app =>
            {
                string root = _files.Root;
                app.MapGet("/result/{**path}", (string path) => FastResults.File(root, path, enableContentHashETags: true));
                app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(root), ServeUnknownFileTypes = true, EnableContentHashETags = true });
            },
            services =>
            {
                services.AddFastFiles(o => o.EnableFileCache = fileCache);
                services.AddSingleton<ILoggerProvider>(_logs);
                if (shutdownTimeout is { } timeout)
                {
                    services.Configure<HostOptions>(o => o.ShutdownTimeout = timeout);
                }
            });
        return _host;
    }

    private static async Task<Stream> OpenAsync(Uri server, bool tls)
    {
        Socket socket = await RawHttp.ConnectAsync(server);
        var network = new NetworkStream(socket, ownsSocket: true);
        if (!tls)
        {
            return network;
        }

        var ssl = new SslStream(network, leaveInnerStreamOpen: false, (_, _, _, _) => true);
        await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions { TargetHost = "localhost", ApplicationProtocols = [SslApplicationProtocol.Http11] });
        return ssl;
    }

    private int DescriptorsOf(string name) => OpenFileDescriptors.TargetsUnder(_files.Root).Count(t => t.EndsWith("/" + name, StringComparison.Ordinal));

    // Until the hash reads the file: its own descriptor beside the request's (or the cache's).
    // Watched from a thread of its own: with the thread pool busy (the whole suite at once) a poll on Task.Delay could
    // wake only after a medium file's hash has ended, and miss it (seen once in CI).
    private async Task UntilHashingAsync(string name, int descriptors = 2)
    {
        bool seen = await Task.Factory.StartNew(
            () =>
            {
                DateTime deadline = DateTime.UtcNow + Bound;
                while (DescriptorsOf(name) < descriptors)
                {
                    if (DateTime.UtcNow >= deadline)
                    {
                        return false;
                    }

                    Thread.Sleep(5);
                }

                return true;
            },
            CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        Assert.True(seen, $"{name} was not hashed.");

        // Let the request reach its wait.
        await Task.Delay(200);
    }

    private Task UntilClosedAsync(string name) => UntilDescriptorsAsync(name, 0);

    private async Task UntilDescriptorsAsync(string name, int count)
    {
        DateTime deadline = DateTime.UtcNow + Bound;
        while (DescriptorsOf(name) != count && DateTime.UtcNow < deadline)
        {
            await Task.Delay(20);
        }

        Assert.Equal(count, DescriptorsOf(name));
    }

    [Theory]
    [InlineData(0, "If-None-Match: \"x\"")]
    [InlineData(1, "If-Match: \"x\"")]
    [InlineData(2, "Range: bytes=0-9\r\nIf-Range: \"x\"")]
    [InlineData(3, "If-None-Match: \"x\"")]
    public async Task Without_the_cache_a_client_leaving_mid_wait_cancels_its_hash_and_closes_the_file(int endpoint, string condition)
    {
        Sparse("huge.iso", Huge);
        TestHost host = await StartAsync(fileCache: false);
        Uri server = endpoint switch { 0 => host.Http, 1 or 2 => host.Https, _ => host.HttpCopy };
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            using (Stream stream = await OpenAsync(server, tls: endpoint is 1 or 2))
            {
                await stream.WriteAsync(Encoding.ASCII.GetBytes($"GET /huge.iso HTTP/1.1\r\nHost: x\r\n{condition}\r\n\r\n"));
                await UntilHashingAsync("huge.iso");
            }

            await UntilClosedAsync("huge.iso");
        });

        // The connection's next neighbour is served as ever.
        _files.Create("small.txt", 100);
        RawResponse after = await RawHttp.SendAsync(server == host.Https ? host.Http : server, "/small.txt");
        Assert.Equal(200, after.Status);
        _logs.AssertNoErrors();
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Without_the_cache_a_stream_reset_mid_wait_cancels_its_hash_and_the_connection_goes_on(bool tls)
    {
        Sparse("huge.iso", Huge);
        byte[] small = _files.Create("small.txt", 100);
        TestHost host = await StartAsync(fileCache: false);
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            await using RawHttp2Client client = await RawHttp2Client.ConnectAsync(tls ? host.Https : host.H2c, 1 << 20, 1 << 20);
            // 41: if-none-match.
            await client.SendRequestAsync(1, "GET", "/huge.iso", (41, "\"x\""));
            await UntilHashingAsync("huge.iso");
            await client.SendRstStreamAsync(1);
            await UntilClosedAsync("huge.iso");

            await client.SendGetAsync(3, "/small.txt");
            using var timeout = new CancellationTokenSource(Bound);
            int status = 0;
            var body = new MemoryStream();
            while (true)
            {
                RawHttp2Client.Frame frame = await client.ReadFrameAsync(timeout.Token) ?? throw new IOException("The connection ended.");
                if (frame.StreamId != 3)
                {
                    continue;
                }

                if (frame.Type == RawHttp2Client.Headers)
                {
                    status = client.DecodeStatus(frame.Payload);
                }
                else if (frame.Type == RawHttp2Client.Data)
                {
                    body.Write(frame.Payload);
                }

                if (frame.EndStream)
                {
                    break;
                }
            }

            Assert.Equal(200, status);
            Assert.Equal(small, body.ToArray());
        });
        _logs.AssertNoErrors();
    }

    [Theory]
    [InlineData("/huge.iso")]
    [InlineData("/result/huge.iso")]
    public async Task Without_the_cache_requests_waiting_for_one_version_share_one_hash_until_the_last_leaves(string target)
    {
        const int Clients = 4;
        Sparse("huge.iso", Huge);
        TestHost host = await StartAsync(fileCache: false);
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            var clients = new List<Stream>();
            try
            {
                for (int i = 0; i < Clients; i++)
                {
                    Stream stream = await OpenAsync(host.Http, tls: false);
                    clients.Add(stream);
                    await stream.WriteAsync(Encoding.ASCII.GetBytes($"GET {target} HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"x{i}\"\r\n\r\n"));
                }

                // Each waiting request holds the file open, and one hash reads it (one read each would be 2 x Clients).
                await UntilHashingAsync("huge.iso", Clients + 1);
                Assert.True(await AtMostAsync("huge.iso", Clients + 1, TimeSpan.FromSeconds(1)), "more than one hash read the file");

                // All but one leave: the hash goes on for the last (its descriptor and the request's).
                for (int i = 0; i < Clients - 1; i++)
                {
                    await clients[i].DisposeAsync();
                }

                await UntilDescriptorsAsync("huge.iso", 2);
                Assert.True(await AtLeastAsync("huge.iso", 2, TimeSpan.FromMilliseconds(500)), "the hash stopped while a request still waited");
            }
            finally
            {
                foreach (Stream stream in clients)
                {
                    await stream.DisposeAsync();
                }
            }

            // The last leaves: nobody needs the file read on.
            await UntilClosedAsync("huge.iso");
        });

        _logs.AssertNoErrors();
    }

    // Whether the file's descriptors stay at or under `most` for `window`, looked at every 10 ms.
    private Task<bool> AtMostAsync(string name, int most, TimeSpan window) => HoldsAsync(name, n => n <= most, window);

    private Task<bool> AtLeastAsync(string name, int least, TimeSpan window) => HoldsAsync(name, n => n >= least, window);

    private Task<bool> HoldsAsync(string name, Func<int, bool> holds, TimeSpan window)
        => Task.Factory.StartNew(
            () =>
            {
                DateTime end = DateTime.UtcNow + window;
                while (DateTime.UtcNow < end)
                {
                    if (!holds(DescriptorsOf(name)))
                    {
                        return false;
                    }

                    Thread.Sleep(10);
                }

                return true;
            },
            CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);

    [Fact]
    public async Task Waiters_leaving_a_background_hash_leave_it_running_for_the_others_and_later_requests()
    {
        Sparse("medium.iso", Medium);
        string tag = ZerosTag(Medium);
        TestHost host = await StartAsync(fileCache: true);
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            var leaving = new List<Stream>();
            var staying = new List<Task<RawResponse>>();
            for (int i = 0; i < 6; i++)
            {
                if (i % 2 == 0)
                {
                    Stream stream = await OpenAsync(i % 4 == 0 ? host.Http : host.Https, tls: i % 4 != 0);
                    // Half by an entity-tag condition, half by a fingerprinted URL.
                    string request = i % 4 == 0
                        ? $"GET /medium.iso HTTP/1.1\r\nHost: x\r\nIf-None-Match: {tag}\r\n\r\n"
                        : $"GET /medium.iso?v={tag[1..^1]} HTTP/1.1\r\nHost: x\r\nRange: bytes=0-0\r\n\r\n";
                    await stream.WriteAsync(Encoding.ASCII.GetBytes(request));
                    leaving.Add(stream);
                }
                else
                {
                    staying.Add(RawHttp.SendAsync(host.HttpCopy, "/medium.iso", extraHeaders: $"If-None-Match: {tag}\r\n"));
                }
            }

            await UntilHashingAsync("medium.iso");
            foreach (Stream stream in leaving)
            {
                await stream.DisposeAsync();
            }

            foreach (RawResponse response in await Task.WhenAll(staying).WaitAsync(Bound))
            {
                Assert.Equal(304, response.Status);
                Assert.Equal(tag, response.Headers["ETag"]);
            }
        });

        // The hash ended, so its file is closed but for the descriptor the cache keeps; a later revalidation matches.
        RawResponse later = await RawHttp.SendAsync(host.Http, "/medium.iso", extraHeaders: $"If-None-Match: {tag}\r\n");
        Assert.Equal(304, later.Status);

        // The root's gates were given back: another large file's hash runs and its waiter is answered.
        Sparse("next.iso", Medium + 1);
        RawResponse next = await RawHttp.SendAsync(host.Http, "/next.iso", extraHeaders: "If-Match: \"x\"\r\n").WaitAsync(Bound);
        Assert.Equal(412, next.Status);
        _logs.AssertNoErrors();
    }

    [Fact]
    public async Task Requests_the_static_lane_hands_off_to_wait_for_a_tag_can_leave_and_later_ones_match()
    {
        Sparse("medium.iso", Medium);
        string tag = ZerosTag(Medium);
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, files: root =>
        {
            FastStaticFileOptions files = LaneHost.FilesFor(root);
            files.ServeUnknownFileTypes = true;
            files.EnableContentHashETags = true;
            return files;
        });
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            (Socket plainSocket, Stream plain) = await LaneHost.ConnectAsync(host.Lane);
            (Socket tlsSocket, Stream tls) = await LaneHost.ConnectAsync(host.LaneTls);
            await plain.WriteAsync(Encoding.ASCII.GetBytes(LaneHost.Request("GET", "/medium.iso", $"If-None-Match: {tag}\r\n")));
            await tls.WriteAsync(Encoding.ASCII.GetBytes(LaneHost.Request("GET", "/medium.iso", $"If-Match: {tag}\r\n")));
            await UntilHashingAsync("medium.iso");
            await plain.DisposeAsync();
            await tls.DisposeAsync();
            plainSocket.Dispose();
            tlsSocket.Dispose();

            RawResponse later = await Poll.EventuallyAsync(
                () => RawHttp.SendAsync(host.Lane, "/medium.iso", extraHeaders: $"If-None-Match: {tag}\r\n"), r => r.Status == 304, Bound);
            Assert.Equal(tag, later.Headers["ETag"]);
        });
    }

    [Theory]
    [InlineData(false, false)]
    [InlineData(true, false)]
    [InlineData(false, true)]
    [InlineData(true, true)]
    public async Task A_result_whose_client_leaves_mid_wait_ends_quietly(bool fileCache, bool http2)
    {
        Sparse("medium.iso", Medium);
        Sparse("huge.iso", Huge);
        TestHost host = await StartAsync(fileCache);
        string file = fileCache ? "medium.iso" : "huge.iso";
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            if (http2)
            {
                await using RawHttp2Client client = await RawHttp2Client.ConnectAsync(host.Https, 1 << 20, 1 << 20);
                await client.SendRequestAsync(1, "GET", "/result/" + file, (41, "\"x\""));
                await UntilHashingAsync(file);
                client.ResetSocket();
            }
            else
            {
                using Stream stream = await OpenAsync(host.Https, tls: true);
                await stream.WriteAsync(Encoding.ASCII.GetBytes($"GET /result/{file} HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"x\"\r\n\r\n"));
                await UntilHashingAsync(file);
            }

            if (fileCache)
            {
                string tag = ZerosTag(Medium);
                RawResponse later = await RawHttp.SendAsync(host.Http, "/result/" + file, extraHeaders: $"If-None-Match: {tag}\r\n").WaitAsync(Bound);
                Assert.Equal(304, later.Status);
            }
            else
            {
                await UntilClosedAsync(file);
            }
        });
        _logs.AssertNoErrors();
    }

    [Fact]
    public async Task A_fingerprinted_url_asked_for_and_given_up_on_is_given_later()
    {
        Sparse("medium.iso", Medium);
        TestHost host = await StartAsync(fileCache: true);
        IFastFilesFingerprinter fingerprints = host.Services.GetRequiredService<IFastFilesFingerprinter>();
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            using var gaveUp = new CancellationTokenSource();
            ValueTask<string> waiting = fingerprints.GetUrlAsync("/medium.iso", gaveUp.Token);
            await UntilHashingAsync("medium.iso");
            gaveUp.Cancel();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(async () => await waiting);
            Assert.Equal("/medium.iso?v=" + ZerosTag(Medium)[1..^1], await fingerprints.GetUrlAsync("/medium.iso").AsTask().WaitAsync(Bound));
        });
        _logs.AssertNoErrors();
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task Stopping_while_requests_wait_for_a_hash_ends_them_and_closes_the_file(bool fileCache)
    {
        Sparse("huge.iso", Huge);
        TestHost host = await StartAsync(fileCache, shutdownTimeout: TimeSpan.FromSeconds(2));
        await LeakChecks.WithoutUnobservedExceptionsAsync(async () =>
        {
            using Stream http1 = await OpenAsync(host.Http, tls: false);
            await http1.WriteAsync(Encoding.ASCII.GetBytes("GET /huge.iso HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"x\"\r\n\r\n"));
            await using RawHttp2Client h2 = await RawHttp2Client.ConnectAsync(host.Https, 1 << 20, 1 << 20);
            await h2.SendRequestAsync(1, "GET", "/huge.iso", (41, "\"x\""));
            await UntilHashingAsync("huge.iso");

            Task stopping = host.StopAsync();
            Assert.Same(stopping, await Task.WhenAny(stopping, Task.Delay(Bound)));
            await stopping;
            await UntilClosedAsync("huge.iso");
        });
        _logs.AssertNoErrors();
    }
}
