using System.Buffers;
using System.Diagnostics.Metrics;
using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;
using System.Text;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// The zero-copy send path on real sockets: <see cref="TestHost.Http"/> has it (every body size goes by sendfile),
/// <see cref="TestHost.HttpCopy"/> does not; both serve the same files through UseFastFiles (file cache off, so every
/// body is read from its file), stock UseStaticFiles behind UseFastSendFile, Results.File and FastResults.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathTests(SendPathTests.Fixture fixture) : IClassFixture<SendPathTests.Fixture>
{
    public static readonly int[] Sizes = [0, 1, 4095, 4096, 65537, (1024 * 1024) + 3];
    private const long SparseLength = 3L * 1024 * 1024 * 1024;
    private const long SparseMarkerAt = (2L * 1024 * 1024 * 1024) + 12345;
    private const long HundredMiB = 100L * 1024 * 1024;
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public Dictionary<int, byte[]> Contents { get; } = [];

        public LogRecorder Logs { get; } = new();

        public Uri TlsWithSendPath => Host.Addresses[4];

        public Uri H2cWithSendPath => Host.Addresses[5];

        public IMeterFactory Meters => Host.Services.GetRequiredService<IMeterFactory>();

        protected override async Task<TestHost> StartHostAsync()
        {
            foreach (int size in Sizes)
            {
                Contents[size] = Files.Create($"f{size}.txt", size);
            }

            using (var sparse = new FileStream(Files.PathOf("sparse.txt"), FileMode.Create, FileAccess.Write))
            {
                sparse.SetLength(SparseLength);
                sparse.Position = SparseMarkerAt;
                sparse.Write(Encoding.ASCII.GetBytes("beyond-two-gibibytes"));
            }

            using (var zeros = new FileStream(Files.PathOf("zeros100.txt"), FileMode.Create, FileAccess.Write))
            {
                zeros.SetLength(HundredMiB);
            }

            string root = Files.Root;
            return await TestHost.StartAsync(
                app =>
                {
                    app.UseFastSendFile();
                    app.Map("/stock", b => b.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(root) }));
                    app.Map("/replaced", b =>
                    {
                        // A body wrapper above the file middleware, as response compression installs one.
                        b.Use((context, next) =>
                        {
                            context.Features.Set<IHttpResponseBodyFeature>(new StreamResponseBodyFeature(context.Response.Body));
                            return next(context);
                        });
                        b.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(root) });
                    });
                    app.MapGet("/result/{name}", (string name) => Microsoft.AspNetCore.Http.Results.File(Path.Combine(root, name), "text/plain", enableRangeProcessing: true));
                    app.MapGet("/fastresult/{name}", (string name) => FastResults.PhysicalFile(Path.Combine(root, name), "text/plain"));
                    // No Content-Length: Kestrel chunks the body.
                    app.MapGet("/chunked/{name}", (HttpContext context, string name) => context.Response.SendFileAsync(Path.Combine(root, name)));
                    app.UseFastFiles(new FastStaticFileOptions { RequestPath = "/fast", FileProvider = new PhysicalFileProvider(root) });
                },
                services =>
                {
                    services.AddFastFiles(o => o.EnableFileCache = false);
                    services.AddSingleton<ILoggerProvider>(Logs);
                },
                configureKestrel: k =>
                {
                    // The send path outside TLS (it must step aside per response) and on an h2c endpoint.
                    k.Listen(IPAddress.Loopback, 0, l =>
                    {
                        l.Protocols = HttpProtocols.Http1;
                        l.UseZeroCopySendFile(o => o.MinimumLength = 0);
                        l.UseHttps(TestCertificate.Instance);
                    });
                    k.Listen(IPAddress.Loopback, 0, l =>
                    {
                        l.Protocols = HttpProtocols.Http2;
                        l.UseZeroCopySendFile(o => o.MinimumLength = 0);
                    });
                });
        }
    }

    public static TheoryData<string, int, string?> Differential()
    {
        var data = new TheoryData<string, int, string?>();
        foreach (string prefix in new[] { "/fast/", "/stock/", "/result/", "/fastresult/" })
        {
            foreach (int size in Sizes)
            {
                data.Add(prefix, size, null);
            }
        }

        // Single ranges at every edge: first byte, last byte, a block boundary either side, suffixes, open ends, the
        // whole file as a range, and an end past the file (clamped, RFC 9110 14.1.2).
        foreach (int size in new[] { 4096, 65537, (1024 * 1024) + 3 })
        {
            var ranges = new HashSet<string> { "0-0", $"{size - 1}-{size - 1}", "0-4095", "4095-4096", "-1", "-4097", $"0-{size - 1}", $"1-{size + 100}", $"{size / 2}-" };
            if (size > 4096)
            {
                ranges.Add("4096-");
            }

            foreach (string range in ranges)
            {
                data.Add("/fast/", size, range);
                data.Add("/stock/", size, range);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Differential))]
    public async Task Sendfile_and_copy_paths_answer_byte_for_byte_the_same(string prefix, int size, string? range)
    {
        using var sendfile = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        string extra = range is null ? string.Empty : $"Range: bytes={range}\r\n";
        RawResponse viaSendfile = await RawHttp.SendAsync(_f.Host.Http, $"{prefix}f{size}.txt", extraHeaders: extra);
        RawResponse viaCopy = await RawHttp.SendAsync(_f.Host.HttpCopy, $"{prefix}f{size}.txt", extraHeaders: extra);

        Assert.Equal(viaCopy.Status, viaSendfile.Status);
        Assert.Equal(Without(viaCopy.Headers, "Date"), Without(viaSendfile.Headers, "Date"));
        Assert.Equal(viaCopy.Body, viaSendfile.Body);
        Assert.Equal(viaSendfile.ContentLength, viaSendfile.Body.Length);
        Assert.True(viaSendfile.Status is 200 or 206, $"status {viaSendfile.Status}");

        byte[] file = _f.Contents[size];
        (long start, long length) = viaSendfile.Status == 206 ? ParseContentRange(viaSendfile.Headers["Content-Range"]) : (0, file.Length);
        Assert.True(file.AsSpan((int)start, (int)length).SequenceEqual(viaSendfile.Body));

        // Every body byte of the send-path response went by sendfile (stock UseStaticFiles and Results.File included).
        Assert.Equal(viaSendfile.Body.Length, await Poll.UntilAsync(() => sendfile.Total, viaSendfile.Body.Length));
    }

    public static TheoryData<string, int, string> MultipartDifferential()
    {
        var data = new TheoryData<string, int, string>();
        foreach (int size in new[] { 4096, 65537, (1024 * 1024) + 3 })
        {
            // First and last byte; three ranges with a suffix and an open end; parts out of file order (kept as asked,
            // RFC 9110 14.6); overlapping and adjacent ranges coalesced into two parts.
            foreach (string ranges in new[] { $"0-0,{size - 1}-{size - 1}", "0-99,200-299,-100", $"{size / 2}-,0-1", "10-20,15-30,21-40,100-200" })
            {
                data.Add("/fast/", size, ranges);
                data.Add("/fastresult/", size, ranges);
            }
        }

        // Four 64 KiB parts across block boundaries, as benchmarks/results/multipart-2026-11-26 asks for them.
        data.Add("/fast/", (1024 * 1024) + 3, "0-65535,131072-196607,262144-327679,393216-458751");
        return data;
    }

    [Theory]
    [MemberData(nameof(MultipartDifferential))]
    public async Task Multipart_ranges_go_by_sendfile_and_match_the_copy_path_byte_for_byte(string prefix, int size, string ranges)
    {
        using var sendfile = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        string extra = $"Range: bytes={ranges}\r\n";
        RawResponse viaSendfile = await RawHttp.SendAsync(_f.Host.Http, $"{prefix}f{size}.txt", extraHeaders: extra);
        RawResponse viaCopy = await RawHttp.SendAsync(_f.Host.HttpCopy, $"{prefix}f{size}.txt", extraHeaders: extra);

        Assert.Equal(206, viaSendfile.Status);
        Assert.Equal(206, viaCopy.Status);
        Assert.Equal(viaSendfile.ContentLength, viaSendfile.Body.Length);

        // Each response has its own boundary: with the copy path's put in its place, the two are the same bytes.
        string boundary = Boundary(viaSendfile);
        string copyBoundary = Boundary(viaCopy);
        Assert.Equal(
            Without(Without(viaCopy.Headers, "Date"), "Content-Type"),
            Without(Without(viaSendfile.Headers, "Date"), "Content-Type"));
        Assert.Equal(viaCopy.Headers["Content-Type"].Replace(copyBoundary, boundary, StringComparison.Ordinal), viaSendfile.Headers["Content-Type"]);
        Assert.Equal(
            Encoding.Latin1.GetString(viaCopy.Body).Replace(copyBoundary, boundary, StringComparison.Ordinal),
            Encoding.Latin1.GetString(viaSendfile.Body));

        // An independent parser finds the file's own bytes in every part; those bytes, and only those, went by sendfile.
        List<MultipartPart> parts = await MultipartPart.ReadAsync(boundary, new MemoryStream(viaSendfile.Body));
        Assert.True(parts.Count >= 2, $"{parts.Count} parts");
        long partBytes = 0;
        foreach (MultipartPart part in parts)
        {
            (long start, long length) = ParseContentRange(part.ContentRange!);
            Assert.True(_f.Contents[size].AsSpan((int)start, (int)length).SequenceEqual(part.Body), $"part {part.ContentRange}");
            partBytes += length;
        }

        Assert.Equal(partBytes, await Poll.UntilAsync(() => sendfile.Total, partBytes));
    }

    [Fact]
    public async Task A_file_truncated_during_a_multipart_send_ends_the_connection_short()
    {
        string name = $"shrinking-parts-{Guid.NewGuid():N}.txt";
        byte[] original = _f.Files.Create(name, 64 * 1024 * 1024);
        using var fallbacks = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.fallbacks");
        using Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 64 * 1024);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        await socket.SendAsync(Encoding.ASCII.GetBytes(
            $"GET /fast/{name} HTTP/1.1\r\nHost: {_f.Host.Http.Authority}\r\nRange: bytes=0-999,4000000-60000000\r\n\r\n"));
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
        Assert.Equal(206, status);
        long promised = long.Parse(headers["Content-Length"], System.Globalization.CultureInfo.InvariantCulture);

        // The second part reaches past the new end.
        byte[] body = await ReadThenTruncateAsync(stream, leftover, name, 8 * 1024 * 1024, timeout.Token);

        // The send path took the body (the copy path would end it short too; the differential test shows the parts of
        // a taken body go by sendfile).
        Assert.Equal(0, fallbacks.Total);
        Assert.True(body.Length < promised, $"{body.Length} of {promised} bytes: the response looked complete");

        // The bytes that came are the first part whole, then the second part's own bytes from its start.
        string text = Encoding.Latin1.GetString(body);
        int second = text.IndexOf("Content-Range: bytes 4000000-60000000/", StringComparison.Ordinal);
        Assert.True(second > 0, "no second part header");
        int bodyStart = text.IndexOf("\r\n\r\n", second, StringComparison.Ordinal) + 4;
        Assert.True(original.AsSpan(4_000_000, body.Length - bodyStart).SequenceEqual(body.AsSpan(bodyStart)), "bytes that are not the file's");
        int first = text.IndexOf("Content-Range: bytes 0-999/", StringComparison.Ordinal);
        int firstStart = text.IndexOf("\r\n\r\n", first, StringComparison.Ordinal) + 4;
        Assert.True(original.AsSpan(0, 1000).SequenceEqual(body.AsSpan(firstStart, 1000)), "first part");
    }

    // Reads the first MiB of a body (after the bytes that came with the head), cuts the file to newLength, then reads
    // until the connection ends.
    private async Task<byte[]> ReadThenTruncateAsync(Stream stream, byte[] leftover, string name, long newLength, CancellationToken cancellationToken)
    {
        var received = new MemoryStream();
        received.Write(leftover);
        var chunk = new byte[64 * 1024];
        while (received.Length < 1024 * 1024)
        {
            int read = await stream.ReadAsync(chunk, cancellationToken);
            Assert.NotEqual(0, read);
            received.Write(chunk, 0, read);
        }

        using (var writer = new FileStream(_f.Files.PathOf(name), FileMode.Open, FileAccess.Write, FileShare.ReadWrite | FileShare.Delete))
        {
            writer.SetLength(newLength);
        }

        await RawHttp.ReadToEndAsync(stream, received, cancellationToken);
        return received.ToArray();
    }

    private static string Boundary(RawResponse response)
    {
        string type = response.Headers["Content-Type"];
        const string Marker = "multipart/byteranges; boundary=";
        Assert.StartsWith(Marker, type, StringComparison.Ordinal);
        return type[Marker.Length..];
    }

    [Theory]
    [InlineData(0, 20)]
    [InlineData(-5, 40)]
    [InlineData(-1000, 4096)]
    public async Task Ranges_beyond_two_gibibytes_come_from_the_right_offset(long fromMarker, int length)
    {
        long start = SparseMarkerAt + fromMarker;
        string extra = $"Range: bytes={start}-{start + length - 1}\r\n";
        RawResponse viaSendfile = await RawHttp.SendAsync(_f.Host.Http, "/fast/sparse.txt", extraHeaders: extra);
        RawResponse viaCopy = await RawHttp.SendAsync(_f.Host.HttpCopy, "/fast/sparse.txt", extraHeaders: extra);

        Assert.Equal(206, viaSendfile.Status);
        Assert.Equal($"bytes {start}-{start + length - 1}/{SparseLength}", viaSendfile.Headers["Content-Range"]);
        Assert.Equal(viaCopy.Body, viaSendfile.Body);
        int markerIndex = (int)-fromMarker;
        Assert.Equal("beyond-two-gibibytes", Encoding.ASCII.GetString(viaSendfile.Body, markerIndex, 20));
    }

    [Fact]
    public async Task Keep_alive_survives_and_pipelined_requests_are_answered_in_order()
    {
        using Socket socket = await RawHttp.ConnectAsync(_f.Host.Http);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        var reader = new HttpConnectionReader(stream);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        int big = (1024 * 1024) + 3;
        string host = _f.Host.Http.Authority;

        // Four requests in one write: sendfile, HEAD (no body), a range, a 304, then the first again.
        string etag = (await RawHttp.SendAsync(_f.Host.Http, "/fast/f65537.txt", "HEAD")).Headers["ETag"];
        string pipelined =
            $"GET /fast/f{big}.txt HTTP/1.1\r\nHost: {host}\r\n\r\n" +
            $"HEAD /fast/f{big}.txt HTTP/1.1\r\nHost: {host}\r\n\r\n" +
            $"GET /stock/f65537.txt HTTP/1.1\r\nHost: {host}\r\nRange: bytes=100-65000\r\n\r\n" +
            $"GET /fast/f65537.txt HTTP/1.1\r\nHost: {host}\r\nIf-None-Match: {etag}\r\n\r\n" +
            $"GET /fast/f4095.txt HTTP/1.1\r\nHost: {host}\r\nRange: bytes=5000-\r\n\r\n" +
            $"GET /fast/f{big}.txt HTTP/1.1\r\nHost: {host}\r\n\r\n";
        await socket.SendAsync(Encoding.ASCII.GetBytes(pipelined));

        var first = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(200, first.Status);
        Assert.Equal(_f.Contents[big], first.Body);

        var head = await reader.ReadResponseAsync(head: true, timeout.Token);
        Assert.Equal(200, head.Status);
        Assert.Equal(big.ToString(System.Globalization.CultureInfo.InvariantCulture), head.Headers["Content-Length"]);

        var range = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(206, range.Status);
        Assert.Equal(_f.Contents[65537].AsSpan(100, 64901).ToArray(), range.Body);

        var notModified = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(304, notModified.Status);

        var unsatisfiable = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(416, unsatisfiable.Status);
        Assert.Empty(unsatisfiable.Body);

        var last = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(200, last.Status);
        Assert.Equal(_f.Contents[big], last.Body);

        // Still open and in step: one more request on the same connection.
        Assert.False(reader.HasBufferedBytes);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /result/f4096.txt HTTP/1.1\r\nHost: {host}\r\n\r\n"));
        var again = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(200, again.Status);
        Assert.Equal(_f.Contents[4096], again.Body);
    }

    [Fact]
    public async Task A_file_truncated_during_the_send_ends_the_connection_without_padding()
    {
        string name = $"shrinking-{Guid.NewGuid():N}.txt";
        byte[] original = _f.Files.Create(name, 64 * 1024 * 1024);
        using Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 64 * 1024);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /fast/{name} HTTP/1.1\r\nHost: {_f.Host.Http.Authority}\r\n\r\n"));
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
        Assert.Equal(200, status);
        Assert.Equal(original.Length.ToString(System.Globalization.CultureInfo.InvariantCulture), headers["Content-Length"]);

        // The connection ends (FIN or reset) short of Content-Length, and every byte before the new end is the file's
        // own. The new end is not page-aligned: truncation zeroes the rest of the page-cache folio holding it in place
        // (up to 2 MiB with large folios), and sendfile's bytes queued in the socket are those pages, so bytes past the
        // new end may arrive zeroed. They are never anything else, and the response never looks complete.
        const int NewLength = 2 * 1024 * 1024 + 12345;
        byte[] body = await ReadThenTruncateAsync(stream, leftover, name, NewLength, timeout.Token);
        Assert.True(body.Length < original.Length, $"{body.Length} bytes: the response looked complete");
        int kept = Math.Min(body.Length, NewLength);
        Assert.True(original.AsSpan(0, kept).SequenceEqual(body.AsSpan(0, kept)), "bytes before the new end that are not the file's");
        for (int i = kept; i < body.Length; i++)
        {
            Assert.True(body[i] == original[i] || body[i] == 0, $"byte {i} past the new end is neither the file's nor zero");
        }
    }

    [Fact]
    public async Task A_file_replaced_by_rename_during_the_send_yields_the_old_version()
    {
        string name = $"replaced-{Guid.NewGuid():N}.txt";
        byte[] original = _f.Files.Create(name, 32 * 1024 * 1024, seed: 7);
        _f.Files.Create(name + ".new", 32 * 1024 * 1024, seed: 8);
        using Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 64 * 1024);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        var reader = new HttpConnectionReader(stream);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /fast/{name} HTTP/1.1\r\nHost: {_f.Host.Http.Authority}\r\n\r\n"));

        // Let the send start and fill the socket, then swap the file under it.
        await Poll.UntilAsync(() => socket.Available, 1);
        File.Move(_f.Files.PathOf(name + ".new"), _f.Files.PathOf(name), overwrite: true);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        var response = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(200, response.Status);
        Assert.True(original.AsSpan().SequenceEqual(response.Body), "not the version the headers described");
    }

    [Fact]
    public async Task Client_resets_mid_send_leak_no_descriptor_or_block_and_log_no_error()
    {
        // Hundreds here; set FASTFILES_RESET_ITERATIONS for a longer manual run (thousands).
        int iterations = int.TryParse(Environment.GetEnvironmentVariable("FASTFILES_RESET_ITERATIONS"), out int n) ? n : 200;
        string host = _f.Host.Http.Authority;
        byte[] request = Encoding.ASCII.GetBytes($"GET /fast/zeros100.txt HTTP/1.1\r\nHost: {host}\r\n\r\n");
        var chunk = new byte[64 * 1024];
        for (int i = 0; i < iterations; i++)
        {
            using Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 64 * 1024);
            await socket.SendAsync(request);
            // Some of the body, a different amount each time, then a reset (linger 0) mid-send.
            int want = (i % 7) * 100 * 1024;
            int got = 0;
            int read;
            do
            {
                read = await socket.ReceiveAsync(chunk);
                got += read;
            }
            while (got < want && read > 0);

            socket.LingerState = new LingerOption(true, 0);
            socket.Close();
        }

        // Every response ends (the server notices each reset), its file is closed and its blocks are back in the pool.
        await OpenFileDescriptors.AssertNoneUnderAsync(_f.Files.Root);
        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
        _f.Logs.AssertNoErrors();

        // The server still serves.
        RawResponse after = await RawHttp.SendAsync(_f.Host.Http, "/fast/f65537.txt");
        Assert.Equal(_f.Contents[65537], after.Body);
    }

    [Fact]
    public async Task A_body_cut_short_by_a_reset_counts_the_bytes_sendfile_handed_to_the_socket()
    {
        using var sendfile = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        using Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 64 * 1024);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /fast/zeros100.txt HTTP/1.1\r\nHost: {_f.Host.Http.Authority}\r\n\r\n"));
        var chunk = new byte[64 * 1024];
        long got = 0;
        int read;
        do
        {
            read = await socket.ReceiveAsync(chunk);
            got += read;
        }
        while (got < 2 * 1024 * 1024 && read > 0);

        socket.LingerState = new LingerOption(true, 0);
        socket.Close();

        // At least what the client read went by sendfile, and not the whole file: the count is what left before the reset.
        long counted = await Poll.UntilAsync(() => sendfile.Total, 2 * 1024 * 1024);
        Assert.InRange(counted, 2 * 1024 * 1024 - 1024, (100L * 1024 * 1024) - 1);
    }

    [Fact]
    public async Task Fallbacks_are_counted_by_reason_and_still_serve_the_file()
    {
        byte[] expected = _f.Contents[65537];
        using var tls = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.fallbacks", new("fastfiles.send_path.reason", "tls"));
        using var http2 = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.fallbacks", new("fastfiles.send_path.reason", "http2"));
        using var chunked = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.fallbacks", new("fastfiles.send_path.reason", "not_content_length"));
        using var replaced = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.fallbacks", new("fastfiles.send_path.reason", "body_replaced"));
        using var copied = new InstrumentRecorder(_f.Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "copy"));

        using (HttpResponseMessage response = await _f.Host.Client.SendAsync(new HttpRequestMessage(HttpMethod.Get, new Uri(_f.TlsWithSendPath, "/fast/f65537.txt"))))
        {
            Assert.Equal(expected, await response.Content.ReadAsByteArrayAsync());
        }

        using (HttpResponseMessage response = await _f.Host.Client.SendAsync(new HttpRequestMessage(HttpMethod.Get, new Uri(_f.H2cWithSendPath, "/fast/f65537.txt"))
        {
            Version = HttpVersion.Version20,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
        }))
        {
            Assert.Equal(expected, await response.Content.ReadAsByteArrayAsync());
        }

        RawResponse viaChunked = await RawHttp.SendAsync(_f.Host.Http, "/chunked/f65537.txt");
        Assert.Equal("chunked", viaChunked.Headers["Transfer-Encoding"]);
        RawResponse viaReplaced = await RawHttp.SendAsync(_f.Host.Http, "/replaced/f65537.txt");
        Assert.Equal(expected, viaReplaced.Body);

        Assert.Equal(1, await Poll.UntilAsync(() => tls.Total, 1));
        Assert.Equal(1, await Poll.UntilAsync(() => http2.Total, 1));
        Assert.Equal(1, await Poll.UntilAsync(() => chunked.Total, 1));
        Assert.Equal(1, await Poll.UntilAsync(() => replaced.Total, 1));
        Assert.Equal(4L * expected.Length, await Poll.UntilAsync(() => copied.Total, 4L * expected.Length));
    }

    [Fact]
    public async Task StopAsync_waits_for_a_send_in_flight()
    {
        var files = new TestFiles();
        byte[] content = files.Create("big.txt", 48 * 1024 * 1024);
        TestHost host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(files.Root) }));
        try
        {
            using Socket socket = await RawHttp.ConnectAsync(host.Http, receiveBufferSize: 64 * 1024);
            using var stream = new NetworkStream(socket, ownsSocket: false);
            var reader = new HttpConnectionReader(stream);
            await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /big.txt HTTP/1.1\r\nHost: {host.Http.Authority}\r\n\r\n"));
            await Poll.UntilAsync(() => socket.Available, 1);

            // The client has read nothing yet, so the send is still in flight when the server is asked to stop.
            Task stopping = host.StopAsync();
            Assert.False(stopping.IsCompleted);
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            var response = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
            Assert.Equal(200, response.Status);
            Assert.True(content.AsSpan().SequenceEqual(response.Body));
            await stopping;
        }
        finally
        {
            await host.DisposeAsync();
            files.Dispose();
        }
    }

    [Fact]
    public async Task A_sendfile_body_longer_than_the_grace_period_is_not_cut_off_when_the_client_keeps_up()
    {
        // Kestrel's data-rate check counts only bytes written through its pipe, which a sendfile body is not; the send
        // path applies the rule itself, by the bytes the client acknowledges: here 16 MiB take several seconds although
        // the grace is 2 s, and the client is looked at once per grace period.
        await using RateHost rate = await RateHost.StartAsync(16 * 1024 * 1024, bytesPerSecond: 1024 * 1024);
        using Socket socket = await RawHttp.ConnectAsync(rate.Host.Http, receiveBufferSize: 64 * 1024);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /big.txt HTTP/1.1\r\nHost: {rate.Host.Http.Authority}\r\n\r\n"));
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        (int status, _, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
        Assert.Equal(200, status);
        var received = new MemoryStream();
        received.Write(leftover);
        var chunk = new byte[64 * 1024];
        while (received.Length < rate.Content.Length)
        {
            // At most about 4 MiB/s: above the 1 MiB/s minimum, but the body takes longer than the grace period.
            await Task.Delay(15);
            int read = await stream.ReadAsync(chunk, timeout.Token);
            Assert.NotEqual(0, read);
            received.Write(chunk, 0, read);
        }

        Assert.True(rate.Content.AsSpan().SequenceEqual(received.ToArray()));
    }

    [Fact]
    public async Task A_minimum_rate_that_allows_more_than_a_timer_can_wait_does_not_break_the_send()
    {
        // 16 MiB at 1 B/s is 194 days, past the longest timer (24.8 days); a slow reader makes the send wait.
        await using RateHost rate = await RateHost.StartAsync(16 * 1024 * 1024, bytesPerSecond: 1);
        using Socket socket = await RawHttp.ConnectAsync(rate.Host.Http, receiveBufferSize: 64 * 1024);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        var reader = new HttpConnectionReader(stream);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /big.txt HTTP/1.1\r\nHost: {rate.Host.Http.Authority}\r\n\r\n"));
        await Poll.UntilAsync(() => socket.Available, 1);
        await Task.Delay(100);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        var response = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(200, response.Status);
        Assert.True(rate.Content.AsSpan().SequenceEqual(response.Body));
        rate.Logs.AssertNoErrors();
    }

    [Fact]
    public async Task A_client_that_stops_reading_a_sendfile_body_is_cut_off_by_the_minimum_data_rate()
    {
        await using RateHost rate = await RateHost.StartAsync(32 * 1024 * 1024, bytesPerSecond: 4 * 1024 * 1024);
        using Socket socket = await RawHttp.ConnectAsync(rate.Host.Http, receiveBufferSize: 64 * 1024);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /big.txt HTTP/1.1\r\nHost: {rate.Host.Http.Authority}\r\n\r\n"));
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        (int status, _, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
        Assert.Equal(200, status);

        // Read nothing until the server has given up (32 MiB at 4 MiB/s: 8 s allowed), then drain what was sent.
        Assert.Equal(0, await Poll.UntilAsync(() => OpenFileDescriptors.CountUnder(rate.Files.Root), 0));
        var received = new MemoryStream();
        received.Write(leftover);
        await RawHttp.ReadToEndAsync(stream, received, timeout.Token);
        Assert.True(received.Length < rate.Content.Length, "the stalled response completed");
        Assert.True(rate.Content.AsSpan(0, (int)received.Length).SequenceEqual(received.ToArray()));
    }

    // 8 GiB at 4 MiB/s may take 34 minutes as a whole; a client that reads the first bytes and then stops is still cut
    // off about a grace period (2 s) after its credit for those bytes is spent, as Kestrel times its own writes, not when
    // the whole body's time is up.
    [Fact]
    public async Task A_client_that_stops_reading_a_long_body_is_cut_off_by_its_progress_not_the_body_length()
    {
        await using RateHost rate = await RateHost.StartAsync(1, bytesPerSecond: 4 * 1024 * 1024, sparseLength: 8L * 1024 * 1024 * 1024);
        using InstrumentRecorder rateAborts = rate.RateAborts();
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        using RateRequest request = await rate.SendAsync("/sparse.bin", 64 * 1024, string.Empty, timeout.Token);
        Assert.Equal(200, request.Status);

        // Within the poll's 30 s bound: the whole body's time would be 2,048 s.
        Assert.Equal(0, await Poll.UntilAsync(() => OpenFileDescriptors.CountUnder(rate.Files.Root), 0));
        Assert.Equal(1, rateAborts.Total);
        var received = new MemoryStream();
        await RawHttp.ReadToEndAsync(request.Stream, received, timeout.Token);
        Assert.True(received.Length < 1024L * 1024 * 1024, $"{received.Length} bytes");
    }

    // A client that keeps reading, but at about 40 KB/s against a 1 MiB/s minimum, is cut off once its credit for the
    // bytes already sent is spent: trickling keeps a connection no more than stopping does.
    [Fact]
    public async Task A_client_reading_below_the_minimum_rate_is_cut_off()
    {
        await using RateHost rate = await RateHost.StartAsync(64 * 1024 * 1024, bytesPerSecond: 1024 * 1024);
        using InstrumentRecorder rateAborts = rate.RateAborts();
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        using RateRequest request = await rate.SendAsync("/big.txt", 16 * 1024, string.Empty, timeout.Token);
        Assert.Equal(200, request.Status);

        long received = request.Leftover.Length;
        var chunk = new byte[4096];
        try
        {
            int read;
            while ((read = await request.Stream.ReadAsync(chunk, timeout.Token)) > 0)
            {
                received += read;
                await Task.Delay(100, timeout.Token);
            }
        }
        catch (IOException)
        {
            // A reset ends it as well as a FIN.
        }

        Assert.False(timeout.IsCancellationRequested, "the trickling client was never cut off");
        Assert.True(received < rate.Content.Length, $"{received} bytes");
        Assert.Equal(1, rateAborts.Total);
    }

    // A multipart body whose part headers outweigh the socket buffers many times (60,000 one-byte parts, about 5.7 MB of
    // part headers): a client that stops reading leaves the send path waiting to send a part's header block as often
    // as a part's byte, and both waits are bounded by the minimum data rate.
    [Fact]
    public async Task A_client_that_stops_reading_a_multipart_body_is_cut_off_by_the_minimum_data_rate()
    {
        const int Parts = 60_000;
        await using RateHost rate = await RateHost.StartAsync(2 * Parts, bytesPerSecond: 4 * 1024 * 1024, maxRanges: Parts);
        using InstrumentRecorder rateAborts = rate.RateAborts();
        var ranges = new StringBuilder("bytes=");
        for (int i = 0; i < Parts; i++)
        {
            ranges.Append(System.Globalization.CultureInfo.InvariantCulture, $"{2 * i}-{2 * i},");
        }

        ranges.Length--;
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        using RateRequest request = await rate.SendAsync("/big.txt", 4 * 1024, $"Range: {ranges}\r\n", timeout.Token);
        Assert.Equal(206, request.Status);
        long promised = long.Parse(request.Headers["Content-Length"], System.Globalization.CultureInfo.InvariantCulture);
        Assert.True(promised > 5_000_000, $"Content-Length {promised}");

        // Read nothing more until the server has given up (the 2 s grace period), then drain what was sent.
        Assert.Equal(0, await Poll.UntilAsync(() => OpenFileDescriptors.CountUnder(rate.Files.Root), 0));
        var received = new MemoryStream();
        received.Write(request.Leftover);
        await RawHttp.ReadToEndAsync(request.Stream, received, timeout.Token);
        Assert.True(received.Length < promised, "the stalled response completed");
        // The send path's own deadline cut it off (Kestrel's rate check never sees a hole's bytes).
        Assert.Equal(1, rateAborts.Total);
        rate.Logs.AssertNoErrors();
    }

    // Without a minimum data rate, an app bounds its writes with its own token. A flush waiting for a client that stopped
    // reading must end when that token is canceled (Kestrel's own output aborts the connection then), not wait for ever.
    [Fact]
    public async Task A_flush_waiting_for_the_socket_ends_when_its_token_is_canceled()
    {
        var outcome = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
        await using TestHost host = await TestHost.StartAsync(
            app => app.MapGet("/endless", async context =>
            {
                using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(1));
                byte[] chunk = new byte[64 * 1024];
                try
                {
                    while (true)
                    {
                        await context.Response.BodyWriter.WriteAsync(chunk, cts.Token);
                    }
                }
                catch (Exception ex)
                {
                    outcome.TrySetResult(cts.IsCancellationRequested ? "canceled" : ex.GetType().Name);
                }
            }),
            configureKestrel: k => k.Limits.MinResponseDataRate = null);
        using Socket socket = await RawHttp.ConnectAsync(host.Http, receiveBufferSize: 16 * 1024);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /endless HTTP/1.1\r\nHost: {host.Http.Authority}\r\n\r\n"));

        // The client reads nothing; the socket fills within the second the token allows.
        Assert.Equal("canceled", await outcome.Task.WaitAsync(TimeSpan.FromSeconds(30)));
        await AssertClosedAsync(socket);
    }

    // The same with a pipelined request waiting behind the response: the writer hands each flush to its batching send
    // then, and once the socket is full a flush waits behind that send, not on the socket itself; it must end with its
    // token all the same. The app cancels only once a write is really waiting. Kestrel's own output is the control.
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task A_flush_waiting_behind_the_batching_send_ends_when_its_token_is_canceled(bool sendPath)
    {
        var outcome = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
        await using TestHost host = await TestHost.StartAsync(
            app =>
            {
                app.MapGet("/endless", async context =>
                {
                    using var cts = new CancellationTokenSource();
                    byte[] chunk = new byte[32 * 1024];
                    try
                    {
                        while (true)
                        {
                            ValueTask<FlushResult> write = context.Response.BodyWriter.WriteAsync(chunk, cts.Token);
                            if (!write.IsCompleted)
                            {
                                cts.Cancel();
                            }

                            await write;

                            // The batching send takes each write before the next, so it is the one left waiting once the
                            // socket is full.
                            await Task.Delay(10);
                        }
                    }
                    catch (Exception ex)
                    {
                        outcome.TrySetResult(cts.IsCancellationRequested ? "canceled" : ex.GetType().Name);
                    }
                });
                app.MapGet("/next", () => "x");
            },
            configureKestrel: k => k.Limits.MinResponseDataRate = null);
        Uri endpoint = sendPath ? host.Http : host.HttpCopy;
        using Socket socket = await RawHttp.ConnectAsync(endpoint, receiveBufferSize: 16 * 1024);
        string authority = endpoint.Authority;

        // One write: the third request is in the buffer Kestrel parses the second from, so it is waiting, unexamined.
        await socket.SendAsync(Encoding.ASCII.GetBytes(
            $"GET /next HTTP/1.1\r\nHost: {authority}\r\n\r\nGET /endless HTTP/1.1\r\nHost: {authority}\r\n\r\nGET /next HTTP/1.1\r\nHost: {authority}\r\n\r\n"));

        // The client reads nothing.
        Assert.Equal("canceled", await outcome.Task.WaitAsync(TimeSpan.FromSeconds(60)));
        await AssertClosedAsync(socket);
    }

    // The server ends the connection (after whatever it had sent) within a bound.
    private static async Task AssertClosedAsync(Socket socket)
    {
        using var stream = new NetworkStream(socket, ownsSocket: false);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        await RawHttp.ReadToEndAsync(stream, new MemoryStream(), timeout.Token);
        Assert.False(timeout.IsCancellationRequested, "the connection stayed open");
    }

    // CancelPendingFlush gives up the wait, not the bytes: a Pipe commits them and its reader sends them, so the client
    // has the headers and the first bytes while the app still holds the response.
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task A_canceled_flush_still_sends_its_bytes(bool sendPath)
    {
        var release = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var flushed = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        await using TestHost host = await TestHost.StartAsync(app => app.MapGet("/cancel", async context =>
        {
            context.Response.ContentLength = 10;
            await context.Response.StartAsync();
            context.Response.BodyWriter.Write("hello"u8);
            context.Response.BodyWriter.CancelPendingFlush();
            FlushResult result = await context.Response.BodyWriter.FlushAsync();
            flushed.TrySetResult(result.IsCanceled);
            await release.Task;
            context.Response.BodyWriter.Write("world"u8);
            await context.Response.BodyWriter.FlushAsync();
        }));
        Uri endpoint = sendPath ? host.Http : host.HttpCopy;
        using Socket socket = await RawHttp.ConnectAsync(endpoint);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /cancel HTTP/1.1\r\nHost: {endpoint.Authority}\r\n\r\n"));
        Assert.True(await flushed.Task.WaitAsync(TimeSpan.FromSeconds(30)), "the flush was not reported canceled");

        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
        var body = new MemoryStream();
        body.Write(leftover);
        byte[] chunk = new byte[64];
        while (body.Length < 5)
        {
            int read = await stream.ReadAsync(chunk, timeout.Token);
            Assert.True(read > 0, "the connection closed");
            body.Write(chunk, 0, read);
        }

        Assert.Equal(200, status);
        Assert.Equal("10", headers["Content-Length"]);
        Assert.Equal("hello"u8.ToArray(), body.ToArray());

        // The rest of the response on the same connection once the app goes on.
        release.TrySetResult();
        while (body.Length < 10)
        {
            int read = await stream.ReadAsync(chunk, timeout.Token);
            Assert.True(read > 0, "the connection closed");
            body.Write(chunk, 0, read);
        }

        Assert.Equal("helloworld"u8.ToArray(), body.ToArray());
    }

    /// <summary>A host with a minimum response data rate (after a 2 s grace period), serving one file.</summary>
    private sealed class RateHost : IAsyncDisposable
    {
        public TestFiles Files { get; } = new();

        public LogRecorder Logs { get; } = new();

        public byte[] Content { get; private set; } = [];

        public TestHost Host { get; private set; } = null!;

        public static async Task<RateHost> StartAsync(int length, double bytesPerSecond, int maxRanges = 64, long sparseLength = 0)
        {
            var rate = new RateHost();
            rate.Content = rate.Files.Create("big.txt", length);
            if (sparseLength > 0)
            {
                using var sparse = new FileStream(rate.Files.PathOf("sparse.bin"), FileMode.Create, FileAccess.Write);
                sparse.SetLength(sparseLength);
            }

            rate.Host = await TestHost.StartAsync(
                app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(rate.Files.Root) }),
                services =>
                {
                    services.AddSingleton<ILoggerProvider>(rate.Logs);
                    services.AddFastFiles(o =>
                    {
                        o.EnableFileCache = false;
                        o.MaxRanges = maxRanges;
                    });
                },
                configureKestrel: k =>
                {
                    k.Limits.MinResponseDataRate = new MinDataRate(bytesPerSecond, gracePeriod: TimeSpan.FromSeconds(2));
                    k.Limits.MaxRequestHeadersTotalSize = 1024 * 1024;
                });
            return rate;
        }

        /// <summary>Counts the send path's aborts for a client below the minimum rate.</summary>
        public InstrumentRecorder RateAborts() => new(
            Host.Services.GetRequiredService<IMeterFactory>(), "fastfiles.send_path.fallbacks", new("fastfiles.send_path.reason", "data_rate_abort"));

        /// <summary>A GET on a new connection with a small receive buffer, read up to the end of the response's head.</summary>
        public async Task<RateRequest> SendAsync(string target, int receiveBufferSize, string extraHeaders, CancellationToken cancellationToken)
        {
            Socket socket = await RawHttp.ConnectAsync(Host.Http, receiveBufferSize: receiveBufferSize);
            var stream = new NetworkStream(socket, ownsSocket: true);
            await socket.SendAsync(Encoding.ASCII.GetBytes($"GET {target} HTTP/1.1\r\nHost: {Host.Http.Authority}\r\n{extraHeaders}\r\n"));
            (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, cancellationToken);
            return new RateRequest(stream, status, headers, leftover);
        }

        public async ValueTask DisposeAsync()
        {
            await Host.DisposeAsync();
            Files.Dispose();
        }
    }

    /// <summary>An open request of <see cref="RateHost.SendAsync"/>: its connection, its head and the body bytes read with it.</summary>
    private sealed record RateRequest(NetworkStream Stream, int Status, Dictionary<string, string> Headers, byte[] Leftover) : IDisposable
    {
        public void Dispose() => Stream.Dispose();
    }

    // An app whose only endpoint is a plaintext HTTP/1.1 one from Kestrel:Endpoints, serving files with the file cache off
    // (so every body is a file body); settings are added to the configuration, configureKestrel runs on Kestrel's options.
    private static async Task<(WebApplication App, Uri Address)> StartConfiguredAsync(
        TestFiles files, Dictionary<string, string?> settings, Action<KestrelServerOptions> configureKestrel)
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        settings["Kestrel:Endpoints:Plain:Url"] = "http://127.0.0.1:0";
        settings["Kestrel:Endpoints:Plain:Protocols"] = "Http1";
        builder.Configuration.AddInMemoryCollection(settings);
        builder.WebHost.ConfigureKestrel(configureKestrel);
        builder.Services.AddFastFiles(o => o.EnableFileCache = false);
        WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(files.Root) });
        await app.StartAsync();
        var address = new Uri(app.Services.GetRequiredService<Microsoft.AspNetCore.Hosting.Server.IServer>().Features
            .Get<Microsoft.AspNetCore.Hosting.Server.Features.IServerAddressesFeature>()!.Addresses.Single());
        return (app, address);
    }

    [Fact]
    public async Task A_plaintext_endpoint_from_configuration_gets_the_send_path()
    {
        using var files = new TestFiles();
        byte[] content = files.Create("page.txt", 100_000);
        AtRest(files, "page.txt");
        (WebApplication app, Uri address) = await StartConfiguredAsync(files, [], k => k.UseFastFilesConnections(o => o.EnableZeroCopySendFile = true));
        await using (app)
        {
            await SendPathAssert.ServedBySendfileAsync(app, address, "/page.txt", content);
            await app.StopAsync();
        }
    }

    [Fact]
    public async Task The_send_path_and_its_minimum_length_bind_from_configuration()
    {
        using var files = new TestFiles();
        byte[] small = files.Create("small.txt", 100_000);
        byte[] large = files.Create("large.txt", 300_000, seed: 2);
        AtRest(files, "large.txt");
        // No code options: both settings come from the FastFiles:Kestrel section.
        (WebApplication app, Uri address) = await StartConfiguredAsync(
            files,
            new Dictionary<string, string?>
            {
                ["FastFiles:Kestrel:EnableZeroCopySendFile"] = "true",
                ["FastFiles:Kestrel:ZeroCopySendFile:MinimumLength"] = "200000",
            },
            k => k.UseFastFilesConnections());
        await using (app)
        {
            IMeterFactory meters = app.Services.GetRequiredService<IMeterFactory>();
            using var sendfile = new InstrumentRecorder(meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
            using var belowMinimum = new InstrumentRecorder(meters, "fastfiles.send_path.fallbacks", new("fastfiles.send_path.reason", "below_minimum"));

            RawResponse copied = await RawHttp.SendAsync(address, "/small.txt");
            Assert.Equal(small, copied.Body);
            Assert.Equal(1, await Poll.UntilAsync(() => belowMinimum.Total, 1));

            RawResponse sent = await RawHttp.SendAsync(address, "/large.txt");
            Assert.Equal(large, sent.Body);
            Assert.Equal(large.Length, await Poll.UntilAsync(() => sendfile.Total, large.Length));
            Assert.Equal(1, belowMinimum.Total);
            await app.StopAsync();
        }
    }

    // Files written just now are copied (ZeroCopySendFileOptions.RecentWriteWindow): these are deployed files at rest.
    private static void AtRest(TestFiles files, string name) => File.SetLastWriteTimeUtc(files.PathOf(name), DateTime.UtcNow.AddHours(-1));

    private static Dictionary<string, string> Without(Dictionary<string, string> headers, string name)
        => headers.Where(h => !h.Key.Equals(name, StringComparison.OrdinalIgnoreCase)).ToDictionary(h => h.Key, h => h.Value, StringComparer.OrdinalIgnoreCase);

    private static (long Start, long Length) ParseContentRange(string value)
    {
        // bytes start-end/length
        string[] parts = value["bytes ".Length..].Split('/')[0].Split('-');
        long start = long.Parse(parts[0], System.Globalization.CultureInfo.InvariantCulture);
        return (start, long.Parse(parts[1], System.Globalization.CultureInfo.InvariantCulture) - start + 1);
    }
}

/// <summary>The send-path tests count pool blocks over the whole process, so nothing else runs beside them.</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class SendPathCollection
{
    public const string Name = "Send path";
}
