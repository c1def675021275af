using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.FunctionalTests.Results;
using FastFiles.SendFile;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.Abstractions;
using Microsoft.AspNetCore.Routing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.SendFile;

/// <summary><c>UseFastSendFile</c>: takeover of SendFileAsync for stock file senders, its contract, and disconnects.</summary>
public sealed class FastSendFileTests(FastSendFileTests.Fixture fixture) : IClassFixture<FastSendFileTests.Fixture>
{
    private const int Length = 100_000;
    private const int BigLength = 16 * 1024 * 1024;
    private readonly TestFiles _files = fixture.Files;
    private readonly RequestRecorder _recorder = fixture.Recorder;
    private readonly byte[] _content = fixture.Content;
    private readonly byte[] _big = fixture.Big;
    private readonly TestHost _host = fixture.Host;

    public sealed class Fixture : HostFixture
    {
        public RequestRecorder Recorder { get; } = new();

        public byte[] Content { get; private set; } = [];

        public byte[] Big { get; private set; } = [];

        protected override async Task<TestHost> StartHostAsync()
        {
            Content = Files.Create("data.bin", Length);
            Big = Files.Create("big.bin", BigLength);
            string root = Files.Root;
            return await TestHost.StartAsync(
                app =>
                {
                    Recorder.Install(app);

                    // Something above replaced the body: FastFiles must defer to it.
                    app.Map("/wrapped", branch =>
                    {
                        BodyFeatureProbe.Install(branch, BodyFeatureProbe.CustomHeader);
                        branch.UseFastSendFile();
                        BodyFeatureProbe.Install(branch);
                        branch.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(root), ServeUnknownFileTypes = true });
                    });

                    // Real-world wrapper above: ResponseCompression's body must keep its own SendFileAsync.
                    app.Map("/compressed", branch =>
                    {
                        branch.UseResponseCompression();
                        branch.UseFastSendFile();
                        BodyFeatureProbe.Install(branch);
                        branch.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(root), ServeUnknownFileTypes = true });
                    });

                    // The same SendFileAsync calls without FastFiles: Kestrel's own fallback, for comparison.
                    app.Map("/stock", branch => branch.Run(SendFileHandler));

                    app.UseFastSendFile();
                    BodyFeatureProbe.Install(app);
                    app.UseStaticFiles(new StaticFileOptions { RequestPath = "/static", FileProvider = new PhysicalFileProvider(root), ServeUnknownFileTypes = true });
                    app.MapGet("/results-file/{name}", (string name) => Microsoft.AspNetCore.Http.Results.File(Path.Combine(root, name), "application/octet-stream", enableRangeProcessing: true));
                    app.MapGet("/physical-result/{name}", (HttpContext context, string name) =>
                        new PhysicalFileResult(Path.Combine(root, name), "application/octet-stream") { EnableRangeProcessing = true }
                            .ExecuteResultAsync(new ActionContext(context, context.GetRouteData(), new ActionDescriptor())));
                    app.MapGet("/sendfile", SendFileHandler);
                    app.MapGet("/feature", (HttpContext context) => ((BodyFeatureProbe)context.Features.GetRequiredFeature<IHttpResponseBodyFeature>()).Inner.GetType().Name);
                    app.MapControllers();
                },
                services =>
                {
                    services.AddResponseCompression(o =>
                {
                    o.EnableForHttps = true;
                    o.MimeTypes = ["application/octet-stream"];
                });
                services.AddSingleton(new ControllerFileRoot(root));
                    services.AddControllers().AddApplicationPart(typeof(FilesController).Assembly);
                });

            async Task SendFileHandler(HttpContext context)
            {
                long offset = long.Parse(context.Request.Query["offset"].ToString(), CultureInfo.InvariantCulture);
                string? countText = context.Request.Query["count"];
                long? count = countText is null ? null : long.Parse(countText, CultureInfo.InvariantCulture);
                string file = Path.Combine(root, context.Request.Query["file"].ToString() is { Length: > 0 } f ? f : "data.bin");
                try
                {
                    await context.Response.SendFileAsync(file, offset, count);
                }
                catch (ArgumentOutOfRangeException ex)
                {
                    // The contract: validation fails before anything is written.
                    context.Response.StatusCode = context.Response.HasStarted ? 500 : StatusCodes.Status422UnprocessableEntity;
                    await context.Response.WriteAsync("rejected:" + ex.ParamName + ":started=" + context.Response.HasStarted);
                }
            }
        }

        protected override Task StoppingAsync()
        {
            Assert.Empty(Recorder.Exceptions);
            return Task.CompletedTask;
        }
    }

    [Theory]
    [InlineData(Transport.Http11)]
    [InlineData(Transport.H2c)]
    [InlineData(Transport.H2Tls)]
    public async Task The_body_feature_downstream_is_fastfiles(Transport transport)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, "/feature");
        Assert.Equal(nameof(FastSendFileFeature), await response.Content.ReadAsStringAsync());
    }

    [Theory]
    [InlineData(Transport.Http11, "/static/data.bin")]
    [InlineData(Transport.Http11, "/results-file/data.bin")]
    [InlineData(Transport.Http11, "/physical-result/data.bin")]
    [InlineData(Transport.Http11, "/mvc/physical/data.bin")]
    [InlineData(Transport.H2c, "/static/data.bin")]
    [InlineData(Transport.H2c, "/results-file/data.bin")]
    [InlineData(Transport.H2c, "/mvc/physical/data.bin")]
    [InlineData(Transport.H2Tls, "/static/data.bin")]
    [InlineData(Transport.H2Tls, "/physical-result/data.bin")]
    [InlineData(Transport.Http11Tls, "/mvc/physical/data.bin")]
    public async Task Stock_file_senders_go_through_fastfiles(Transport transport, string path)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, path);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(nameof(FastSendFileFeature), response.Header(BodyFeatureProbe.InnerHeader));
        Assert.Equal(_content, await response.Content.ReadAsByteArrayAsync());
    }

    [Theory]
    [InlineData("/static/data.bin")]
    [InlineData("/results-file/data.bin")]
    [InlineData("/physical-result/data.bin")]
    [InlineData("/mvc/physical/data.bin")]
    public async Task Stock_file_senders_ranges_go_through_fastfiles(string path)
    {
        using HttpResponseMessage response = await _host.SendAsync(Transport.H2c, path, r => r.Headers.TryAddWithoutValidation("Range", "bytes=4000-70000"));
        Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
        Assert.Equal(nameof(FastSendFileFeature), response.Header(BodyFeatureProbe.InnerHeader));
        Assert.Equal(_content.AsSpan(4000, 66001).ToArray(), await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Does_not_take_over_when_something_above_replaced_the_body()
    {
        using HttpResponseMessage response = await _host.SendAsync(Transport.Http11, "/wrapped/data.bin");
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        // The probe below UseFastSendFile sees the custom wrapper, not FastFiles' feature...
        Assert.Equal(nameof(BodyFeatureProbe), response.Header(BodyFeatureProbe.InnerHeader));
        // ...and the wrapper's own SendFileAsync ran (forwarding to Kestrel's).
        Assert.NotNull(response.Header(BodyFeatureProbe.CustomHeader));
        Assert.NotEqual(nameof(FastSendFileFeature), response.Header(BodyFeatureProbe.CustomHeader));
        Assert.Equal(_content, await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Does_not_take_over_below_response_compression()
    {
        using HttpResponseMessage response = await _host.SendAsync(Transport.Http11, "/compressed/data.bin", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "gzip"));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("gzip", response.Header("Content-Encoding"));
        Assert.NotEqual(nameof(FastSendFileFeature), response.Header(BodyFeatureProbe.InnerHeader));
        Assert.NotNull(response.Header(BodyFeatureProbe.InnerHeader));
        await using var gzip = new System.IO.Compression.GZipStream(await response.Content.ReadAsStreamAsync(), System.IO.Compression.CompressionMode.Decompress);
        var decompressed = new MemoryStream();
        await gzip.CopyToAsync(decompressed);
        Assert.Equal(_content, decompressed.ToArray());
    }

    public static TheoryData<Transport, long, long?> ValidRanges()
    {
        var data = new TheoryData<Transport, long, long?>();
        (long, long?)[] cases =
        [
            (0, null), (0, 0), (0, 1), (1, null), (Length - 1, 1), (Length - 1, null), (Length, null), (Length, 0),
            (4095, 2), (4096, 65536), (12345, 54321), (0, Length), (65535, 3), (65536, null),
        ];
        foreach (Transport t in TransportMatrix.Default)
        {
            foreach ((long offset, long? count) in cases)
            {
                data.Add(t, offset, count);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(ValidRanges))]
    public async Task Offset_and_count_are_honoured_exactly(Transport transport, long offset, long? count)
    {
        string query = string.Create(CultureInfo.InvariantCulture, $"?offset={offset}") + (count is null ? "" : string.Create(CultureInfo.InvariantCulture, $"&count={count}"));
        using HttpResponseMessage fast = await _host.SendAsync(transport, "/sendfile" + query);
        using HttpResponseMessage stock = await _host.SendAsync(transport, "/stock" + query);
        byte[] expected = _content.AsSpan((int)offset, (int)(count ?? Length - offset)).ToArray();
        Assert.Equal(HttpStatusCode.OK, fast.StatusCode);
        Assert.Equal(expected, await fast.Content.ReadAsByteArrayAsync());
        Assert.Equal(expected, await stock.Content.ReadAsByteArrayAsync());
    }

    [Theory]
    [InlineData(-1, null, "offset")]
    [InlineData(Length + 1, null, "offset")]
    [InlineData(long.MaxValue, null, "offset")]
    [InlineData(long.MinValue, 1L, "offset")]
    [InlineData(0, -1L, "count")]
    [InlineData(0, Length + 1L, "count")]
    [InlineData(50_000, 50_001L, "count")]
    [InlineData(Length, 1L, "count")]
    [InlineData(1, long.MaxValue, "count")]
    public async Task Bad_offset_or_count_throws_before_anything_is_sent(long offset, long? count, string parameter)
    {
        string query = string.Create(CultureInfo.InvariantCulture, $"?offset={offset}") + (count is null ? "" : string.Create(CultureInfo.InvariantCulture, $"&count={count}"));
        foreach (string prefix in new[] { "/sendfile", "/stock" })
        {
            using HttpResponseMessage response = await _host.SendAsync(Transport.Http11, prefix + query);
            Assert.Equal(HttpStatusCode.UnprocessableEntity, response.StatusCode);
            Assert.Equal("rejected:" + parameter + ":started=False", await response.Content.ReadAsStringAsync());
        }
    }

    [Fact]
    public async Task Missing_file_throws_file_not_found_and_static_files_gives_404()
    {
        using HttpResponseMessage response = await _host.SendAsync(Transport.Http11, "/static/missing.bin");
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
    }

    // UseStaticFiles takes a FIFO for a file (it exists and is no directory); FastFiles' SendFileAsync refuses to open
    // it (an open for reading would block until a writer comes), so the stock middleware answers 404 at once.
    [Fact]
    public async Task A_named_pipe_is_never_opened_and_static_files_gives_404()
    {
        using (var mkfifo = System.Diagnostics.Process.Start("mkfifo", _files.PathOf("pipe.bin")))
        {
            await mkfifo.WaitForExitAsync();
            Assert.Equal(0, mkfifo.ExitCode);
        }

        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        using HttpResponseMessage response = await _host.SendAsync(Transport.Http11, "/static/pipe.bin").WaitAsync(bound.Token);
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
    }

    [Fact]
    public async Task File_deleted_between_lookup_and_open_is_404_not_500()
    {
        // UseStaticFiles looks the file up, runs OnPrepareResponse, then calls SendFileAsync: deleting in
        // between makes FastFiles' open fail, which must surface as the stock FileNotFoundException (404).
        _files.Create("doomed.bin", 1000);
        string doomed = _files.PathOf("doomed.bin");
        var reached = new System.Collections.Concurrent.ConcurrentQueue<string>();
        await using TestHost host = await TestHost.StartAsync(app =>
        {
            app.UseFastSendFile();
            BodyFeatureProbe.Install(app, onSendFile: reached.Enqueue);
            app.UseStaticFiles(new StaticFileOptions
            {
                FileProvider = new PhysicalFileProvider(_files.Root),
                ServeUnknownFileTypes = true,
                OnPrepareResponse = ctx => File.Delete(doomed),
            });
        });
        using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/doomed.bin");
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        // UseStaticFiles clears the headers on the way to 404, so the probe reports out of band.
        Assert.Equal(nameof(FastSendFileFeature), Assert.Single(reached));
        Assert.False(File.Exists(doomed));
    }

    [Theory]
    [InlineData("/static/big.bin")]
    [InlineData("/results-file/big.bin")]
    [InlineData("/mvc/physical/big.bin")]
    [InlineData("/sendfile?offset=0&file=big.bin")]
    public async Task Http11_client_reset_mid_transfer_is_swallowed_and_aborts(string path)
    {
        string id = Guid.NewGuid().ToString("N");
        string target = path + (path.Contains('?', StringComparison.Ordinal) ? "&" : "?") + "awaitabort=1&id=" + id;
        using (Socket socket = await RawHttp.ConnectAsync(_host.Http, receiveBufferSize: 16 * 1024))
        {
            await socket.SendAsync(Encoding.ASCII.GetBytes($"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n"));
            using var stream = new NetworkStream(socket, ownsSocket: false);
            (int status, _, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, CancellationToken.None);
            Assert.Equal(200, status);
            int received = leftover.Length;
            var buffer = new byte[16 * 1024];
            while (received < 256 * 1024)
            {
                received += await stream.ReadAsync(buffer);
            }

            // RST rather than FIN.
            socket.LingerState = new LingerOption(true, 0);
        }

        RequestRecord record = await _recorder.WaitAsync(id);
        Assert.Null(record.Exception);
        Assert.True(record.Aborted);
        await AssertHealthyAsync();
    }

    [Theory]
    [InlineData("/static/big.bin")]
    [InlineData("/physical-result/big.bin")]
    public async Task Http2_stream_reset_mid_transfer_is_swallowed_and_aborts(string path)
    {
        string id = Guid.NewGuid().ToString("N");
        using (var cts = new CancellationTokenSource())
        {
            HttpRequestMessage request = _host.Request(Transport.H2c, path + "?awaitabort=1&id=" + id);
            using HttpResponseMessage response = await _host.Client.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, cts.Token);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Stream body = await response.Content.ReadAsStreamAsync(cts.Token);
            var buffer = new byte[16 * 1024];
            int received = 0;
            while (received < 256 * 1024)
            {
                received += await body.ReadAsync(buffer, cts.Token);
            }

            await cts.CancelAsync();
        }

        RequestRecord record = await _recorder.WaitAsync(id);
        Assert.Null(record.Exception);
        Assert.True(record.Aborted);
        await AssertHealthyAsync();
    }

    private async Task AssertHealthyAsync()
    {
        await ResponseHeaders.AssertNoOpenFilesUnderAsync(_files.Root);
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage response = await _host.SendAsync(transport, "/static/big.bin");
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(TestFiles.Sha256(_big), TestFiles.Sha256(await response.Content.ReadAsByteArrayAsync()));
        }
    }
}
