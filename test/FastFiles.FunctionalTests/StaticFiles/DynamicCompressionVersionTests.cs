using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Net;
using System.Text;
using System.Text.Json;
using FastFiles.FunctionalTests.Connections;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// Dynamic compression against file changes (a variant is never published for the wrong version), the static lane,
/// configuration binding, and Node's http2 client.
/// </summary>
public sealed class DynamicCompressionVersionTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    /// <summary>Holds the compression worker after it encoded the first brotli variant of a file, until released.</summary>
    private sealed class Gate
    {
        private readonly ConcurrentDictionary<string, (TaskCompletionSource Entered, TaskCompletionSource Release)> _held = new();

        public void Hold(string file) => _held[file] = (new(TaskCreationOptions.RunContinuationsAsynchronously), new(TaskCreationOptions.RunContinuationsAsynchronously));

        public Task Entered(string file) => _held[file].Entered.Task.WaitAsync(TimeSpan.FromSeconds(60));

        public void Release(string file) => _held[file].Release.TrySetResult();

        public async Task Hook(string file, string coding)
        {
            if (coding == "br" && _held.TryGetValue(file, out var held) && held.Entered.TrySetResult())
            {
                await held.Release.Task;
            }
        }
    }

    private async Task<TestHost> StartAsync(Gate gate, Action<FastFilesOptions>? fastFiles = null)
        => await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions
            {
                FileProvider = new PhysicalFileProvider(_files.Root),
                EnableDynamicCompression = true,
                DynamicCompressionHook = gate.Hook,
            }),
            services => services.AddFastFiles(o => fastFiles?.Invoke(o)));

    [Fact]
    public async Task A_full_queue_sends_identity_and_a_later_request_queues_the_file_again()
    {
        for (int i = 0; i < 300; i++)
        {
            _files.Write($"q{i}.css", DynamicCompressionTests.Text(2_000, 100 + i));
        }

        var gate = new Gate();
        gate.Hold("/q0.css");
        await using TestHost host = await StartAsync(gate);
        using var full = Outcomes(host, "queue_full");
        (await GetAsync(host, "/q0.css", "br")).Dispose();
        await gate.Entered("/q0.css");

        // The worker holds q0; q1..q256 fill the queue's 256 places; the other 43 find it full.
        for (int i = 1; i < 300; i++)
        {
            using HttpResponseMessage response = await GetAsync(host, $"/q{i}.css", "br");
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            Assert.Empty(response.Content.Headers.ContentEncoding);
            Assert.Equal("Accept-Encoding", response.Header("Vary"));
        }

        Assert.Equal(43, full.Total);
        gate.Release("/q0.css");
        using HttpResponseMessage last = await Compression.WaitForEncodingAsync(host, Transport.Http11, "/q299.css", "br");
        Assert.Equal(File.ReadAllBytes(_files.PathOf("q299.css")), Compression.Decode("br", await last.Content.ReadAsByteArrayAsync()));
    }

    [Fact]
    public async Task Without_the_file_cache_files_are_sent_as_they_are()
    {
        byte[] css = DynamicCompressionTests.Text(10_000, 71);
        _files.Write("nocache.css", css);
        await using TestHost host = await StartAsync(new Gate(), o => o.EnableFileCache = false);
        for (int i = 0; i < 3; i++)
        {
            using HttpResponseMessage response = await GetAsync(host, "/nocache.css", "br, gzip");
            Assert.Empty(response.Content.Headers.ContentEncoding);
            Assert.Null(response.Header("Vary"));
            Assert.Equal(css, await response.Content.ReadAsByteArrayAsync());
        }
    }

    [Fact]
    public async Task A_variant_larger_than_a_quarter_of_the_cache_budget_is_not_kept()
    {
        byte[] large = DynamicCompressionTests.Text(600_000, 61), small = DynamicCompressionTests.Text(60_000, 62);
        _files.Write("large.css", large);
        _files.Write("small.css", small);
        await using TestHost host = await StartAsync(new Gate(), o => o.FileCacheSizeLimit = 200_000);
        using var overBudget = Outcomes(host, "over_budget");

        (await GetAsync(host, "/large.css", "br, gzip")).Dispose();
        await Compression.PollAsync(() => overBudget.Total >= 2, "both variants of large.css refused");
        using HttpResponseMessage identity = await GetAsync(host, "/large.css", "br, gzip");
        Assert.Empty(identity.Content.Headers.ContentEncoding);
        Assert.Equal(large, await identity.Content.ReadAsByteArrayAsync());

        using HttpResponseMessage encoded = await Compression.WaitForEncodingAsync(host, Transport.Http11, "/small.css", "br");
        Assert.Equal(small, Compression.Decode("br", await encoded.Content.ReadAsByteArrayAsync()));
    }

    /// <summary>Counts the compression outcomes <paramref name="outcome"/> of this host.</summary>
    private static InstrumentRecorder Outcomes(TestHost host, string outcome)
        => new(host.Services.GetRequiredService<IMeterFactory>(), "fastfiles.compression.variants", new("fastfiles.compression.outcome", outcome));

    private static Task<HttpResponseMessage> GetAsync(TestHost host, string path, string? acceptEncoding)
        => host.SendAsync(Transport.Http11, path, r =>
        {
            if (acceptEncoding is not null)
            {
                r.Headers.TryAddWithoutValidation("Accept-Encoding", acceptEncoding);
            }
        });

    [Fact]
    public async Task A_cached_file_changed_while_its_variant_is_made_never_gets_the_old_variant()
    {
        byte[] v1 = DynamicCompressionTests.Text(20_000, 11), v2 = DynamicCompressionTests.Text(24_000, 12);
        _files.Write("live.css", v1);
        var gate = new Gate();
        gate.Hold("/live.css");
        await using TestHost host = await StartAsync(gate);
        using var stale = Outcomes(host, "stale");

        string v1Tag;
        using (HttpResponseMessage first = await GetAsync(host, "/live.css", "br"))
        {
            Assert.Empty(first.Content.Headers.ContentEncoding);
            Assert.Equal(v1, await first.Content.ReadAsByteArrayAsync());
            v1Tag = first.Header("ETag")!;
        }

        // The worker has v1's brotli bytes and waits to publish them: meanwhile identity is served, with Vary.
        await gate.Entered("/live.css");
        using (HttpResponseMessage meanwhile = await GetAsync(host, "/live.css", "br"))
        {
            Assert.Empty(meanwhile.Content.Headers.ContentEncoding);
            Assert.Equal("Accept-Encoding", meanwhile.Header("Vary"));
            Assert.Equal(v1, await meanwhile.Content.ReadAsByteArrayAsync());
        }

        _files.Write("live.css", v2);
        await Compression.PollAsync(
            async () =>
            {
                using HttpResponseMessage response = await GetAsync(host, "/live.css", null);
                return (await response.Content.ReadAsByteArrayAsync()).SequenceEqual(v2);
            },
            "the cache to serve v2");

        gate.Release("/live.css");
        await Compression.PollAsync(() => stale.Total >= 1, "v1's variant discarded as stale");
        using HttpResponseMessage encoded = await Compression.WaitForEncodingAsync(host, Transport.Http11, "/live.css", "br");
        Assert.Equal(v2, Compression.Decode("br", await encoded.Content.ReadAsByteArrayAsync()));
        Assert.DoesNotContain(v1Tag.TrimEnd('"'), encoded.Header("ETag"));
    }

    [Fact]
    public async Task A_file_read_from_disk_that_changes_while_compressed_is_not_published()
    {
        // Larger than the content cache holds: compressed from the file itself, then checked against its stamp again.
        byte[] v1 = DynamicCompressionTests.Text(200_000, 21), v2 = DynamicCompressionTests.Text(200_000, 22);
        _files.Write("live.js", v1);
        var gate = new Gate();
        gate.Hold("/live.js");
        await using TestHost host = await StartAsync(gate);
        using var changed = Outcomes(host, "changed");
        using var published = Outcomes(host, "published");

        (await GetAsync(host, "/live.js", "br")).Dispose();
        await gate.Entered("/live.js");

        // Same length, rewritten in place: only the modification and change times tell the versions apart.
        await using (FileStream stream = new(_files.PathOf("live.js"), FileMode.Open, FileAccess.Write, FileShare.ReadWrite | FileShare.Delete))
        {
            await stream.WriteAsync(v2);
        }

        gate.Release("/live.js");
        await Compression.PollAsync(() => changed.Total >= 1, "v1's variant discarded because the file changed");
        Assert.Equal(0, published.Total);

        using HttpResponseMessage encoded = await Compression.WaitForEncodingAsync(host, Transport.Http11, "/live.js", "br");
        Assert.Equal(v2, Compression.Decode("br", await encoded.Content.ReadAsByteArrayAsync()));
        using HttpResponseMessage identity = await GetAsync(host, "/live.js", null);
        Assert.Equal(v2, await identity.Content.ReadAsByteArrayAsync());
        // The variant's tag is v2's: the identity's modification time, then the encoded length and the coding.
        string identityTag = identity.Header("ETag")!;
        Assert.StartsWith(identityTag[..(identityTag.IndexOf('-') + 1)], encoded.Header("ETag"));
        Assert.EndsWith("-br\"", encoded.Header("ETag"));
    }

    [Fact]
    public async Task The_static_lane_serves_the_variants_byte_for_byte_as_UseFastFiles()
    {
        byte[] css = DynamicCompressionTests.Text(30_000, 31);
        _files.Write("page.css", css);
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, files: root =>
        {
            FastStaticFileOptions options = LaneHost.FilesFor(root);
            options.EnableDynamicCompression = true;
            return options;
        });

        // Each lane endpoint and the app have caches of their own, each compressing on first request: wait for all.
        const string End = "GET /__end HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        foreach (Uri endpoint in new[] { host.Plain, host.Lane, host.Tls, host.LaneTls })
        {
            foreach (string coding in new[] { "br", "gzip" })
            {
                Stopwatch waited = Stopwatch.StartNew();
                while (!Encoding.ASCII.GetString(await LaneHost.ExchangeAsync(
                    endpoint, [Encoding.ASCII.GetBytes($"GET /page.css HTTP/1.1\r\nHost: x\r\nAccept-Encoding: {coding}\r\n\r\n{End}")])).Contains($"Content-Encoding: {coding}\r\n", StringComparison.Ordinal))
                {
                    Assert.True(waited.Elapsed < TimeSpan.FromSeconds(60), $"no {coding} variant from {endpoint}");
                    await Task.Delay(20);
                }
            }
        }

        RawResponse br = await RawHttp.SendAsync(host.Lane, "/page.css", extraHeaders: "Accept-Encoding: br\r\n");
        Assert.Equal(css, Compression.Decode("br", br.Body));
        RawResponse gzip = await RawHttp.SendAsync(host.Lane, "/page.css", extraHeaders: "Accept-Encoding: gzip\r\n");
        Assert.Equal(css, Compression.Decode("gzip", gzip.Body));
        string brTag = br.Headers["ETag"];

        string[] requests =
        [
            "GET /page.css HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\n\r\n",
            "GET /page.css HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n",
            "GET /page.css HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip;q=0.5, br;q=0.4\r\n\r\n",
            "GET /page.css HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /page.css HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity;q=0\r\n\r\n",
            "GET /page.css HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\nRange: bytes=5-50\r\n\r\n",
            $"GET /page.css HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br\r\nIf-None-Match: {brTag}\r\n\r\n",
            $"GET /page.css HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\nIf-None-Match: {brTag}\r\n\r\n",
            "HEAD /page.css HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, br\r\n\r\n",
        ];
        long appRequests = host.AppRequests;
        foreach (string request in requests)
        {
            foreach ((Uri app, Uri lane) in new[] { (host.Plain, host.Lane), (host.Tls, host.LaneTls) })
            {
                byte[] expected = await LaneHost.ExchangeAsync(app, [Encoding.ASCII.GetBytes(request + End)]);
                long before = host.AppRequests;
                byte[] actual = await LaneHost.ExchangeAsync(lane, [Encoding.ASCII.GetBytes(request + End)]);
                Assert.Equal(LaneHost.WithoutDates(expected), LaneHost.WithoutDates(actual));
                // Only the closing /__end request reached the app: the lane answered the file request itself.
                Assert.Equal(before + 1, host.AppRequests);
            }
        }

        Assert.True(host.AppRequests > appRequests);
    }

    [Fact]
    public async Task Options_bind_from_configuration()
    {
        _files.Write("site.css", DynamicCompressionTests.Text(5_000, 41));
        _files.Write("site.js", DynamicCompressionTests.Text(5_000, 42));
        WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args = ["--hostBuilder:reloadConfigOnChange=false"],
            EnvironmentName = "Production",
            ContentRootPath = AppContext.BaseDirectory,
            WebRootPath = _files.Root,
        });
        builder.Logging.ClearProviders();
        builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["FastFiles:BrotliCompressionQuality"] = "4",
            ["FastFiles:GzipCompressionLevel"] = "9",
            ["FastFiles:StaticFiles:EnableDynamicCompression"] = "true",
            ["FastFiles:StaticFiles:CompressibleContentTypes:0"] = "text/css",
            ["FastFiles:StaticFiles:DynamicCompressionMinimumSize"] = "100",
            ["FastFiles:StaticFiles:DynamicCompressionMaximumSize"] = "1000000",
        });
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0));
        await using WebApplication app = builder.Build();
        app.UseFastFiles();
        await app.StartAsync();

        FastFilesOptions fast = app.Services.GetRequiredService<IOptions<FastFilesOptions>>().Value;
        FastStaticFileOptions files = app.Services.GetRequiredService<IOptions<FastStaticFileOptions>>().Value;
        Assert.Equal(4, fast.BrotliCompressionQuality);
        Assert.Equal(9, fast.GzipCompressionLevel);
        Assert.True(files.EnableDynamicCompression);
        Assert.Equal(["text/css"], files.CompressibleContentTypes!);
        Assert.Equal(100, files.DynamicCompressionMinimumSize);
        Assert.Equal(1_000_000, files.DynamicCompressionMaximumSize);

        var address = new Uri(app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single());
        using var client = new HttpClient(new SocketsHttpHandler { AutomaticDecompression = DecompressionMethods.None });
        Stopwatch waited = Stopwatch.StartNew();
        while (true)
        {
            using var request = new HttpRequestMessage(HttpMethod.Get, new Uri(address, "/site.css"));
            request.Headers.TryAddWithoutValidation("Accept-Encoding", "br");
            using HttpResponseMessage css = await client.SendAsync(request);
            if (css.Header("Content-Encoding") == "br")
            {
                break;
            }

            Assert.True(waited.Elapsed < TimeSpan.FromSeconds(60), "site.css never compressed");
            await Task.Delay(20);
        }

        // text/javascript is not in the configured list.
        using var jsRequest = new HttpRequestMessage(HttpMethod.Get, new Uri(address, "/site.js"));
        jsRequest.Headers.TryAddWithoutValidation("Accept-Encoding", "br");
        using HttpResponseMessage js = await client.SendAsync(jsRequest);
        Assert.Null(js.Header("Content-Encoding"));
        Assert.Null(js.Header("Vary"));
        await app.StopAsync();
    }

    [Fact]
    public async Task Node_http2_client_decodes_variants_and_their_ranges()
    {
        byte[] file = DynamicCompressionTests.Text(50_000, 51);
        _files.Write("node.css", file);
        _files.Write("ca.pem", Encoding.ASCII.GetBytes(TestCertificate.Instance.ExportCertificatePem()));
        await using TestHost host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(_files.Root),
            EnableDynamicCompression = true,
        }));
        var encoded = new Dictionary<string, byte[]>();
        foreach (string coding in new[] { "br", "gzip" })
        {
            using HttpResponseMessage ready = await Compression.WaitForEncodingAsync(host, Transport.H2c, "/node.css", coding);
            encoded[coding] = await ready.Content.ReadAsByteArrayAsync();
        }

        var start = new ProcessStartInfo("node") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (string arg in new[]
        {
            Path.Combine(AppContext.BaseDirectory, "StaticFiles", "h2compression.js"), _files.PathOf("ca.pem"), "/node.css",
            host.Https.ToString().TrimEnd('/'), host.H2c.ToString().TrimEnd('/'),
        })
        {
            start.ArgumentList.Add(arg);
        }

        using Process node = Process.Start(start)!;
        Task<string> stdout = node.StandardOutput.ReadToEndAsync();
        Task<string> stderr = node.StandardError.ReadToEndAsync();
        using (var cts = new CancellationTokenSource(TimeSpan.FromSeconds(120)))
        {
            try
            {
                await node.WaitForExitAsync(cts.Token);
            }
            catch (OperationCanceledException)
            {
                node.Kill(entireProcessTree: true);
                throw;
            }
        }

        Assert.True(node.ExitCode == 0, await stderr);
        using JsonDocument doc = JsonDocument.Parse(await stdout);
        Assert.Equal(4, doc.RootElement.GetArrayLength());
        foreach (JsonElement result in doc.RootElement.EnumerateArray())
        {
            string coding = result.GetProperty("coding").GetString()!;
            byte[] body = Convert.FromBase64String(result.GetProperty("encoded").GetString()!);
            Assert.Equal(200, result.GetProperty("status").GetInt32());
            Assert.Equal(coding, result.GetProperty("encoding").GetString());
            Assert.Equal("Accept-Encoding", result.GetProperty("vary").GetString());
            Assert.EndsWith($"-{coding}\"", result.GetProperty("etag").GetString());
            Assert.Equal(TestFiles.Sha256(file), result.GetProperty("decodedSha256").GetString()!.ToUpperInvariant());
            Assert.Equal(encoded[coding], body);
            Assert.Equal(body.Length, result.GetProperty("length").GetInt64());

            // One range of the variant: its encoded bytes (several ranges of a variant get the whole variant).
            Assert.Equal(206, result.GetProperty("rangeStatus").GetInt32());
            Assert.Equal(coding, result.GetProperty("rangeEncoding").GetString());
            Assert.Equal(body.AsSpan(1000, 200).ToArray(), Convert.FromBase64String(result.GetProperty("rangeBody").GetString()!));
        }
    }
}
