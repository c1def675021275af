using System.Diagnostics.Metrics;
using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.Testing;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.AspNetCore.Server.Kestrel.Transport.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace FastFiles.FunctionalTests.Hosting;

/// <summary>
/// A FastFiles part either works where the app asked for it or says so once at startup, naming the endpoint and the
/// reason: TLS-side connection parts on HTTPS endpoints bound from URLs, parts added before UseHttps,
/// UseFastFiles next to MapStaticAssets; and configuration reaches UseFastFiles and the Kestrel-level toggles. Also
/// the tuned host profile's settings, as the running host sees them.
/// </summary>
public sealed class StartupWarningTests
{
    private const int StaticAssetsNotAccelerated = 6001;
    private const int TlsPartsNotApplied = 6002;
    private const int UrlEndpointConnections = 6003;
    private const int StaticAssetChanged = 6005;
    private const int PlaintextPartsNotApplied = 6006;
    private const string Coalesced = "fastfiles.tls_records.coalesced_connections";

    [Fact]
    public async Task Https_endpoint_bound_from_a_url_gets_the_tls_parts()
    {
        await using Started started = await StartAsync(
            ["--urls", "https://127.0.0.1:0"],
            UrlEndpoints(addFastFiles: true));

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        Assert.True(started.Coalesced.Total >= 1, "the URL-bound HTTPS connection was not coalesced");
        LogCapture.Entry applied = Assert.Single(started.Logs.WithId(UrlEndpointConnections));
        Assert.Contains("TLS record coalescing", applied.Message, StringComparison.Ordinal);
        Assert.Empty(started.Logs.WithId(TlsPartsNotApplied));
    }

    // A Unix socket URL (http://unix:/path) parses with port 0: it gave its scheme to an https://127.0.0.1:0 endpoint bound
    // after it, which then got the plaintext parts outside its TLS and no TLS parts (warning 6002 told the user to put it
    // in --urls, where it was), and the socket itself got no parts at all.
    [Fact]
    public async Task A_unix_socket_url_and_a_port_zero_url_each_get_their_own_parts()
    {
        using var files = new TestFiles();
        byte[] page = files.Create("page.txt", 3000);
        string socketPath = Path.Combine(Path.GetTempPath(), $"ff-{Guid.NewGuid():N}.sock");
        try
        {
            await using Started started = await StartAsync(["--urls", $"http://unix:{socketPath};https://127.0.0.1:0"], builder =>
            {
                UrlEndpoints(addFastFiles: true, o =>
                {
                    o.EnableStaticLane = true;
                    o.EnableZeroCopySendFile = true;
                })(builder);
                builder.Services.ConfigureStaticLane(lane => lane.Roots.Add(new StaticLaneRootOptions { PhysicalPath = files.Root }));
            });
            using var lane = new InstrumentRecorder(started.Services.GetRequiredService<IMeterFactory>(), "fastfiles.lane.requests");

            string https = started.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Single(a => a.StartsWith("https://", StringComparison.Ordinal));
            using HttpResponseMessage secure = await started.Client.GetAsync(new Uri(new Uri(https), "/page.txt"));
            Assert.Equal(page, await secure.Content.ReadAsByteArrayAsync());
            Assert.True(started.Coalesced.Total >= 1, "the HTTPS connection was not coalesced");
            Assert.Empty(started.Logs.WithId(TlsPartsNotApplied));

            // Over the Unix socket the lane answers.
            using var unix = new HttpClient(new SocketsHttpHandler
            {
                ConnectCallback = async (_, cancellationToken) =>
                {
                    var socket = new System.Net.Sockets.Socket(System.Net.Sockets.AddressFamily.Unix, System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Unspecified);
                    await socket.ConnectAsync(new System.Net.Sockets.UnixDomainSocketEndPoint(socketPath), cancellationToken);
                    return new System.Net.Sockets.NetworkStream(socket, ownsSocket: true);
                },
            });
            long before = lane.Total;
            Assert.Equal(page, await unix.GetByteArrayAsync("http://localhost/page.txt"));
            Assert.True(await Poll.UntilAsync(() => lane.Total, before + 1) >= before + 1, "the lane did not answer on the Unix socket");
        }
        finally
        {
            File.Delete(socketPath);
        }
    }

    // Kestrel keeps a single ConfigureEndpointDefaults callback; the app's and FastFiles' both run, in either order.
    [Theory]
    [InlineData(true, false)]
    [InlineData(false, false)]
    [InlineData(false, true)]
    public async Task App_endpoint_defaults_callback_and_the_url_endpoint_parts_both_apply(bool appCallbackFirst, bool appAddsTls)
    {
        int appCallbacks = 0;
        int appConnections = 0;
        void AppDefaults(ListenOptions listen)
        {
            Interlocked.Increment(ref appCallbacks);
            listen.Use(next => connection =>
            {
                Interlocked.Increment(ref appConnections);
                return next(connection);
            });
            if (appAddsTls)
            {
                listen.UseHttps(TestCertificate.Instance);
            }
        }

        await using Started started = await StartAsync(["--urls", "https://127.0.0.1:0"], builder =>
        {
            builder.Services.AddFastFiles();
            builder.WebHost.ConfigureKestrel(kestrel =>
            {
                kestrel.ConfigureHttpsDefaults(https => https.ServerCertificate = TestCertificate.Instance);
                if (appCallbackFirst)
                {
                    kestrel.ConfigureEndpointDefaults(AppDefaults);
                }

                kestrel.UseFastFilesConnections();
            });
            if (!appCallbackFirst)
            {
                // A later ConfigureKestrel, as a library or a later line of Program.cs would register it.
                builder.WebHost.ConfigureKestrel(kestrel => kestrel.ConfigureEndpointDefaults(AppDefaults));
            }
        });

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        Assert.Equal(1, Volatile.Read(ref appCallbacks));
        Assert.True(Volatile.Read(ref appConnections) >= 1, "the app's connection middleware did not run");
        Assert.True(started.Coalesced.Total >= 1, "the URL-bound HTTPS connection was not coalesced");
        Assert.Single(started.Logs.WithId(UrlEndpointConnections));
        Assert.Empty(started.Logs.WithId(TlsPartsNotApplied));
    }

    // Kestrel skips its own UseHttps on a configured endpoint whose defaults callback already added TLS; FastFiles'
    // per-endpoint callback must do the same and put its parts behind that TLS, not a second handshake.
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Configuration_endpoint_whose_defaults_callback_adds_tls_gets_one_tls_and_the_parts(bool sni)
    {
        using var files = new TestFiles();
        string pfx = files.PathOf("server.pfx");
        File.WriteAllBytes(pfx, TestCertificate.Instance.Export(X509ContentType.Pkcs12, "pw"));
        string certificate = sni ? "Hosts:Sni:*:Certificate" : "Hosts:Certificate";
        await using Started started = await StartAsync(
            [
                "--Kestrel:Endpoints:Hosts:Url=https://127.0.0.1:0",
                $"--Kestrel:Endpoints:{certificate}:Path={pfx}",
                $"--Kestrel:Endpoints:{certificate}:Password=pw",
            ],
            builder =>
            {
                builder.Services.AddFastFiles();
                builder.WebHost.ConfigureKestrel(kestrel =>
                {
                    kestrel.ConfigureEndpointDefaults(listen => listen.UseHttps(TestCertificate.Instance));
                    kestrel.UseFastFilesConnections();
                });
            });

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        Assert.True(started.Coalesced.Total >= 1, "the configured endpoint's connection was not coalesced");
        Assert.Empty(started.Logs.WithId(TlsPartsNotApplied));
    }

    [Fact]
    public async Task Https_endpoint_bound_from_a_url_without_AddFastFiles_is_named_in_a_warning()
    {
        await using Started started = await StartAsync(
            ["--urls", "https://127.0.0.1:0"],
            UrlEndpoints(addFastFiles: false));

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        Assert.Equal(0, started.Coalesced.Total);
        AssertEndpointNamedInWarning(started, "AddFastFiles()");
    }

    // The lane goes behind TLS as the other TLS-side parts do: asked for alone, an HTTPS endpoint it cannot reach is named
    // all the same, and where it is applied the startup log names it.
    [Fact]
    public async Task Https_endpoint_bound_from_a_url_without_AddFastFiles_is_named_when_only_the_lane_was_asked_for()
    {
        await using Started started = await StartAsync(
            ["--urls", "https://127.0.0.1:0"],
            UrlEndpoints(addFastFiles: false, o => { o.EnableTlsRecordCoalescing = false; o.EnableStaticLane = true; }));

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        AssertEndpointNamedInWarning(started, "AddFastFiles()");
        Assert.Contains("static lane", Assert.Single(started.Logs.WithId(TlsPartsNotApplied)).Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Https_endpoint_bound_from_a_url_names_the_static_lane_among_its_parts()
    {
        await using Started started = await StartAsync(
            ["--urls", "https://127.0.0.1:0"],
            UrlEndpoints(addFastFiles: true, o => o.EnableStaticLane = true));

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        LogCapture.Entry applied = Assert.Single(started.Logs.WithId(UrlEndpointConnections));
        Assert.Contains("TLS record coalescing", applied.Message, StringComparison.Ordinal);
        Assert.Contains("static lane", applied.Message, StringComparison.Ordinal);
        Assert.Empty(started.Logs.WithId(TlsPartsNotApplied));
    }

    // The lane and the send path reach URL endpoints only through AddFastFiles' startup filter; without it a plaintext
    // URL endpoint that was asked for them is named (it got neither, silently), and an endpoint they reach is not.
    [Theory]
    [InlineData("url", false, true)]
    [InlineData("url", true, false)]
    [InlineData("configuration", false, false)]
    public async Task Plaintext_endpoint_the_lane_and_send_path_miss_is_named_in_a_warning(string bound, bool addFastFiles, bool named)
    {
        string[] args = bound == "url" ? ["--urls", "http://127.0.0.1:0"] : ["--Kestrel:Endpoints:Plain:Url=http://127.0.0.1:0"];
        await using Started started = await StartAsync(args, UrlEndpoints(addFastFiles, o => { o.EnableStaticLane = true; o.EnableZeroCopySendFile = true; }));

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        if (!named)
        {
            Assert.Empty(started.Logs.WithId(PlaintextPartsNotApplied));
            return;
        }

        LogCapture.Entry warning = Assert.Single(started.Logs.WithId(PlaintextPartsNotApplied));
        Assert.Equal(LogLevel.Warning, warning.Level);
        Assert.Contains(started.Address, warning.Message, StringComparison.Ordinal);
        Assert.Contains("static lane", warning.Message, StringComparison.Ordinal);
        Assert.Contains("zero-copy send path", warning.Message, StringComparison.Ordinal);
        Assert.Contains("AddFastFiles()", warning.Message, StringComparison.Ordinal);
    }

    // Kestrel's SNI selection is internal, so Kestrel keeps adding that endpoint's TLS; with AddFastFiles() the parts
    // go behind it (the loader runs before binding), without it the endpoint is named in the warning.
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task Sni_endpoint_from_configuration_keeps_its_tls_and_gets_the_parts_behind_it(bool addFastFiles)
    {
        using var files = new TestFiles();
        string pfx = files.PathOf("server.pfx");
        File.WriteAllBytes(pfx, TestCertificate.Instance.Export(X509ContentType.Pkcs12, "pw"));
        await using Started started = await StartAsync(
            [
                "--Kestrel:Endpoints:Hosts:Url=https://127.0.0.1:0",
                $"--Kestrel:Endpoints:Hosts:Sni:*:Certificate:Path={pfx}",
                "--Kestrel:Endpoints:Hosts:Sni:*:Certificate:Password=pw",
            ],
            builder =>
            {
                if (addFastFiles)
                {
                    builder.Services.AddFastFiles();
                }

                builder.WebHost.ConfigureKestrel(kestrel => kestrel.UseFastFilesConnections());
            });

        // The per-host certificate still answers the handshake.
        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        if (addFastFiles)
        {
            // Counted only on the plaintext side of TLS, where a TLS handshake feature is present.
            Assert.True(started.Coalesced.Total >= 1, "the SNI endpoint's connection was not coalesced");
            Assert.Empty(started.Logs.WithId(TlsPartsNotApplied));
        }
        else
        {
            Assert.Equal(0, started.Coalesced.Total);
            AssertEndpointNamedInWarning(started, "Kestrel:Endpoints:Hosts:Sni");
            AssertEndpointNamedInWarning(started, "AddFastFiles()");
        }
    }

    [Fact]
    public async Task Parts_added_before_UseHttps_are_named_in_a_warning()
    {
        await using Started started = await StartAsync([], CodeEndpoint(listen =>
        {
            listen.UseFastFilesConnections();
            listen.UseHttps(TestCertificate.Instance);
        }));

        AssertEndpointNamedInWarning(started, "before UseHttps()");
    }

    [Fact]
    public async Task Code_endpoint_with_parts_after_UseHttps_gets_no_warning()
    {
        await using Started started = await StartAsync([], CodeEndpoint(listen => listen.UseHttps(TestCertificate.Instance).UseFastFilesConnections()));

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        Assert.True(started.Coalesced.Total >= 1);
        Assert.Empty(started.Logs.WithId(TlsPartsNotApplied));
    }

    [Fact]
    public async Task Kestrel_toggles_bind_from_the_FastFiles_Kestrel_section()
    {
        await using Started started = await StartAsync(
            ["--urls", "https://127.0.0.1:0", "--FastFiles:Kestrel:EnableTlsRecordCoalescing=false"],
            UrlEndpoints(addFastFiles: true));

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync());
        Assert.Equal(0, started.Coalesced.Total);
        // Nothing TLS-side was asked for, so nothing is missing.
        Assert.Empty(started.Logs.WithId(TlsPartsNotApplied));
    }

    [Fact]
    public async Task UseFastFiles_next_to_MapStaticAssets_warns_once()
    {
        using var files = new TestFiles();
        string manifest = WriteAssets(files);
        await using Started started = await StartAsync(["--urls", "http://127.0.0.1:0"], _ => { }, app =>
        {
            app.UseFastFiles();
            app.MapStaticAssets(manifest);
        }, webRoot: files.PathOf("wwwroot"));

        LogCapture.Entry warning = Assert.Single(started.Logs.WithId(StaticAssetsNotAccelerated));
        Assert.Equal(LogLevel.Warning, warning.Level);
        Assert.Contains("WithFastFiles()", warning.Message, StringComparison.Ordinal);
        Assert.Contains("/css/site.", warning.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task UseFastFiles_next_to_accelerated_MapStaticAssets_does_not_warn()
    {
        using var files = new TestFiles();
        string manifest = WriteAssets(files);
        await using Started started = await StartAsync(["--urls", "http://127.0.0.1:0"], _ => { }, app =>
        {
            app.UseFastFiles();
            app.MapStaticAssets(manifest).WithFastFiles();
        }, webRoot: files.PathOf("wwwroot"));

        Assert.Equal(HttpStatusCode.OK, await started.GetAsync("/css/site.css"));
        Assert.Empty(started.Logs.WithId(StaticAssetsNotAccelerated));
    }

    // MapStaticAssets answers ranges, HEAD and conditionals from the file as it is now. Once the file is replaced in
    // place, FastFiles stops answering full GETs from memory too (it looks once per FileCacheRevalidationInterval, here
    // on every request) and names it in warning 6005, so a body resumed with a range is never two versions under one
    // strong ETag: before, full GETs kept the build's bytes while ranges were the new file's.
    [Fact]
    public async Task Asset_replaced_in_place_after_first_use_is_then_left_to_MapStaticAssets()
    {
        using var files = new TestFiles();
        string manifest = WriteAssets(files);
        await using Started started = await StartAsync(
            ["--urls", "http://127.0.0.1:0", "--FastFiles:FileCacheRevalidationInterval=00:00:00"],
            _ => { },
            app => app.MapStaticAssets(manifest).WithFastFiles(),
            webRoot: files.PathOf("wwwroot"));

        (string firstBody, string firstTag) = await GetAssetAsync(started);
        Assert.Equal(SiteCss, firstBody);
        Assert.Equal(EntityTagOf(firstBody), firstTag);
        Assert.Empty(started.Logs.WithId(StaticAssetChanged));

        // Same length, other bytes; written in place (same inode), as a careless deploy would.
        string replaced = SiteCss.Replace('0', '1');
        await File.WriteAllTextAsync(files.PathOf("wwwroot/css/site.css"), replaced);
        for (int i = 0; i < 3; i++)
        {
            (string body, string tag) = await GetAssetAsync(started);
            Assert.Equal(replaced, body);
            Assert.Equal(firstTag, tag);
        }

        using var ranged = new HttpRequestMessage(HttpMethod.Get, new Uri(new Uri(started.Address), "/css/site.css"));
        ranged.Headers.Range = new System.Net.Http.Headers.RangeHeaderValue(5, null);
        ranged.Headers.IfRange = new System.Net.Http.Headers.RangeConditionHeaderValue(firstTag);
        using HttpResponseMessage rest = await started.Client.SendAsync(ranged);
        Assert.Equal(HttpStatusCode.PartialContent, rest.StatusCode);
        Assert.Equal(replaced[5..], await rest.Content.ReadAsStringAsync());
        Assert.Single(started.Logs.WithId(StaticAssetChanged));
    }

    // A manifest entry without Content-Length gives nothing to check the file against: the endpoint answers, and no
    // warning claims the file changed.
    [Fact]
    public async Task Asset_without_Content_Length_in_its_manifest_is_left_to_MapStaticAssets_without_a_warning()
    {
        using var files = new TestFiles();
        string manifest = WriteAssets(files);
        File.WriteAllText(manifest, System.Text.RegularExpressions.Regex.Replace(File.ReadAllText(manifest), ",?\\{\"Name\":\"Content-Length\",\"Value\":\"[^\"]*\"\\}", string.Empty));
        Assert.DoesNotContain("Content-Length", File.ReadAllText(manifest), StringComparison.Ordinal);
        await using Started started = await StartAsync(["--urls", "http://127.0.0.1:0"], _ => { }, app => app.MapStaticAssets(manifest).WithFastFiles(), webRoot: files.PathOf("wwwroot"));

        // MapStaticAssets' own answer (it sends the manifest's length, none here), not one from memory.
        _ = await GetAssetAsync(started);
        Assert.Empty(started.Logs.WithId(StaticAssetChanged));
    }

    [Fact]
    public async Task Asset_changed_before_first_use_is_left_to_MapStaticAssets_and_named_in_a_warning()
    {
        using var files = new TestFiles();
        string manifest = WriteAssets(files);
        await File.WriteAllTextAsync(files.PathOf("wwwroot/css/site.css"), SiteCss.Replace('0', '1'));
        await using Started started = await StartAsync(["--urls", "http://127.0.0.1:0"], _ => { }, app => app.MapStaticAssets(manifest).WithFastFiles(), webRoot: files.PathOf("wwwroot"));

        (string body, _) = await GetAssetAsync(started);
        // What MapStaticAssets itself sends for a changed file: the file as it is now.
        Assert.Equal(SiteCss.Replace('0', '1'), body);
        LogCapture.Entry warning = Assert.Single(started.Logs.WithId(StaticAssetChanged));
        Assert.Equal(LogLevel.Warning, warning.Level);
        Assert.Contains("css/site.css", warning.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task UseFastFiles_without_AddFastFiles_binds_its_configuration_section()
    {
        using var files = new TestFiles();
        files.Write("wwwroot/a.txt", Encoding.UTF8.GetBytes("hello"));
        await using Started started = await StartAsync(
            ["--urls", "http://127.0.0.1:0", "--FastFiles:StaticFiles:CacheControl=public, max-age=77"],
            _ => { },
            app => app.UseFastFiles(),
            webRoot: files.PathOf("wwwroot"));

        using HttpResponseMessage response = await started.Client.GetAsync(new Uri(new Uri(started.Address), "/a.txt"));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("public, max-age=77", response.Header("Cache-Control"));
    }

    // MaxRanges = 1 turns multipart answers off: two ranges then get the whole file, as the section asks.
    [Theory]
    [InlineData(false, false)]
    [InlineData(true, false)]
    [InlineData(true, true)]
    public async Task FastResults_bind_the_FastFiles_section_with_or_without_AddFastFiles(bool configured, bool addFastFiles)
    {
        using var files = new TestFiles();
        files.Write("www/a.txt", Encoding.ASCII.GetBytes("0123456789"));
        string root = files.PathOf("www");
        string[] args = configured ? ["--urls", "http://127.0.0.1:0", "--FastFiles:MaxRanges=1"] : ["--urls", "http://127.0.0.1:0"];
        await using Started started = await StartAsync(args, builder =>
        {
            if (addFastFiles)
            {
                builder.Services.AddFastFiles();
            }
        }, app => app.MapGet("/file", () => FastResults.File(root, "a.txt")));

        for (int i = 0; i < 2; i++)
        {
            using var request = new HttpRequestMessage(HttpMethod.Get, new Uri(new Uri(started.Address), "/file"));
            request.Headers.TryAddWithoutValidation("Range", "bytes=0-0,5-5");
            using HttpResponseMessage response = await started.Client.SendAsync(request);
            byte[] body = await response.Content.ReadAsByteArrayAsync();
            if (configured)
            {
                Assert.Equal(HttpStatusCode.OK, response.StatusCode);
                Assert.Equal("0123456789", Encoding.ASCII.GetString(body));
            }
            else
            {
                Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);
                Assert.StartsWith("multipart/byteranges", response.Content.Headers.ContentType?.MediaType, StringComparison.Ordinal);
            }
        }
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task Tuned_profile_sets_the_socket_Kestrel_and_logging_settings(bool tuned)
    {
        // The output folder's appsettings.json (the sample's) quiets Microsoft.AspNetCore; hosting logs requests at Information.
        await using Started started = await StartAsync(["--urls", "http://127.0.0.1:0", "--Logging:LogLevel:Microsoft.AspNetCore=Information"], builder =>
        {
            if (tuned)
            {
                builder.WebHost.UseFastFilesTunedProfile();
            }
        });

        using HttpResponseMessage response = await started.Client.GetAsync(new Uri(started.Address));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(!tuned, response.Headers.Contains("Server"));
        SocketTransportOptions sockets = started.Services.GetRequiredService<IOptions<SocketTransportOptions>>().Value;
        // The transport stays at its defaults: inline scheduling cost pipelined clients (benchmarks/results/tuned-knobs-2026-11-23).
        Assert.False(sockets.UnsafePreferInlineScheduling);
        Assert.True(sockets.WaitForDataBeforeAllocatingBuffer);
        // Hosting logs "Request starting/finished" at Information unless the profile turned its category off.
        Assert.Equal(!tuned, started.Logs.Entries.Any(e => e.Category == "Microsoft.AspNetCore.Hosting.Diagnostics"));
    }

    [Fact]
    public async Task Inline_sockets_set_the_transport_options_and_the_runtime_variable_once()
    {
        const string Variable = "DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS";
        // The runtime reads the variable when its socket engine starts: make sure it has started in this process
        // (it has, for any earlier test), so setting the variable here changes nothing for the other tests.
        using (var listener = new System.Net.Sockets.TcpListener(IPAddress.Loopback, 0))
        {
            listener.Start();
            using var client = new System.Net.Sockets.TcpClient();
            await client.ConnectAsync(IPAddress.Loopback, ((IPEndPoint)listener.LocalEndpoint).Port);
        }

        string? before = Environment.GetEnvironmentVariable(Variable);
        try
        {
            Environment.SetEnvironmentVariable(Variable, null);
            WebApplicationBuilder builder = WebApplication.CreateBuilder();
            builder.WebHost.UseFastFilesInlineSockets();
            await using WebApplication app = builder.Build();
            SocketTransportOptions sockets = app.Services.GetRequiredService<IOptions<SocketTransportOptions>>().Value;
            Assert.True(sockets.UnsafePreferInlineScheduling);
            Assert.False(sockets.WaitForDataBeforeAllocatingBuffer);
            Assert.Equal("1", Environment.GetEnvironmentVariable(Variable));

            // A value the environment already has is the operator's: left as it is.
            Environment.SetEnvironmentVariable(Variable, "0");
            WebApplication.CreateBuilder().WebHost.UseFastFilesInlineSockets();
            Assert.Equal("0", Environment.GetEnvironmentVariable(Variable));
        }
        finally
        {
            Environment.SetEnvironmentVariable(Variable, before);
        }
    }

    // One startup warning (6002) naming the endpoint and the reason.
    private static void AssertEndpointNamedInWarning(Started started, string reason)
    {
        LogCapture.Entry warning = Assert.Single(started.Logs.WithId(TlsPartsNotApplied));
        Assert.Equal(LogLevel.Warning, warning.Level);
        Assert.Contains(started.Address, warning.Message, StringComparison.Ordinal);
        Assert.Contains(reason, warning.Message, StringComparison.Ordinal);
    }

    // Endpoints from --urls, with the test certificate as Kestrel's default (what UseHttps() without arguments uses).
    private static Action<WebApplicationBuilder> UrlEndpoints(bool addFastFiles, Action<FastFilesKestrelOptions>? fastFiles = null) => builder =>
    {
        if (addFastFiles)
        {
            builder.Services.AddFastFiles();
        }

        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.ConfigureHttpsDefaults(https => https.ServerCertificate = TestCertificate.Instance);
            kestrel.UseFastFilesConnections(fastFiles);
        });
    };

    private static Action<WebApplicationBuilder> CodeEndpoint(Action<ListenOptions> configure) => builder =>
    {
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(kestrel =>
        {
            kestrel.UseFastFilesConnections();
            kestrel.Listen(IPAddress.Loopback, 0, configure);
        });
    };

    private const string SiteCss = "body { margin: 0; }";

    private static async Task<(string Body, string EntityTag)> GetAssetAsync(Started started)
    {
        using HttpResponseMessage response = await started.Client.GetAsync(new Uri(new Uri(started.Address), "/css/site.css"));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        return (await response.Content.ReadAsStringAsync(), response.Headers.ETag!.ToString());
    }

    private static string EntityTagOf(string body) => "\"" + Convert.ToBase64String(SHA256.HashData(Encoding.UTF8.GetBytes(body))) + "\"";

    private static string WriteAssets(TestFiles files)
    {
        files.Write("wwwroot/css/site.css", Encoding.UTF8.GetBytes(SiteCss));
        string manifest = files.PathOf("app.staticwebassets.endpoints.json");
        StaticWebAssetsManifest.Write(files.PathOf("wwwroot"), manifest, compress: false);
        return manifest;
    }

    private static async Task<Started> StartAsync(string[] args, Action<WebApplicationBuilder> configure, Action<WebApplication>? configureApp = null, string? webRoot = null)
    {
        var logs = new LogCapture();
        WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args = ["--hostBuilder:reloadConfigOnChange=false", .. args],
            EnvironmentName = "Production",
            ContentRootPath = AppContext.BaseDirectory,
            WebRootPath = webRoot,
        });
        builder.Logging.ClearProviders();
        builder.Logging.AddProvider(logs);
        configure(builder);
        WebApplication app = builder.Build();
        var coalesced = new InstrumentRecorder(app.Services.GetRequiredService<IMeterFactory>(), Coalesced);
        if (configureApp is null)
        {
            app.MapGet("/", () => "hello");
        }
        else
        {
            configureApp(app);
        }

        await app.StartAsync();
        return new Started(app, logs, coalesced);
    }

    private sealed class Started(WebApplication app, LogCapture logs, InstrumentRecorder coalesced) : IAsyncDisposable
    {
        public LogCapture Logs { get; } = logs;

        public IServiceProvider Services => app.Services;

        public InstrumentRecorder Coalesced { get; } = coalesced;

        public string Address { get; } = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();

        public HttpClient Client { get; } = new(new SocketsHttpHandler
        {
            SslOptions = { RemoteCertificateValidationCallback = (_, cert, _, _) => cert is not null && cert.GetCertHashString() == TestCertificate.Instance.GetCertHashString() },
        });

        public async Task<HttpStatusCode> GetAsync(string path = "/")
        {
            using HttpResponseMessage response = await Client.GetAsync(new Uri(new Uri(Address), path));
            await response.Content.ReadAsByteArrayAsync();
            return response.StatusCode;
        }

        public async ValueTask DisposeAsync()
        {
            Client.Dispose();
            Coalesced.Dispose();
            await app.StopAsync();
            await app.DisposeAsync();
        }
    }
}
