using System.Diagnostics.Metrics;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Hosting;

/// <summary>Wiring in less usual shapes: UseFastFilesConnections called twice, lane roots without AddFastFiles, endpoint defaults that add TLS, negative Kestrel-side options.</summary>
public sealed class UnusualWiringTests
{
    // Two UseFastFilesConnections calls (a shared setup, then the app's own): the last options apply to endpoints from
    // Kestrel:Endpoints and to code endpoints (FastFilesKestrelState), so they must apply to URL endpoints too.
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Second_UseFastFilesConnections_call_reaches_url_and_configuration_endpoints_alike(bool fromConfiguration)
    {
        using var files = new TestFiles();
        byte[] content = files.Create("page.txt", 100_000);
        File.SetLastWriteTimeUtc(files.PathOf("page.txt"), DateTime.UtcNow.AddHours(-1));

        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder(fromConfiguration
            ? ["--Kestrel:Endpoints:Plain:Url=http://127.0.0.1:0"]
            : ["--urls", "http://127.0.0.1:0"]);
        builder.Services.AddFastFiles(o => o.EnableFileCache = false);
        builder.WebHost.ConfigureKestrel(k => k.UseFastFilesConnections());
        builder.WebHost.ConfigureKestrel(k => k.UseFastFilesConnections(o => o.EnableZeroCopySendFile = true));
        WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(files.Root) });
        Uri address = (await CodeEndpoints.StartAsync(app)).Single();
        await using (app)
        {
            await SendPathAssert.ServedBySendfileAsync(app, address, "/page.txt", content);
            await app.StopAsync();
        }
    }

    // Without AddFastFiles, UseFastFiles() binds FastFiles:StaticFiles itself (README "Configuration"); a lane root with
    // Files = null uses "the UseFastFiles root and options", so the lane's responses must carry the same Cache-Control.
    [Fact]
    public async Task Lane_root_without_AddFastFiles_uses_the_options_UseFastFiles_binds()
    {
        using var files = new TestFiles();
        files.Create("page.txt", 1000);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder("--FastFiles:StaticFiles:CacheControl=public, max-age=77");
        builder.Services.ConfigureFastStaticFiles(o => o.FileProvider = new PhysicalFileProvider(files.Root));
        builder.Services.ConfigureStaticLane(lane => lane.Roots.Add(new StaticLaneRootOptions()));
        builder.WebHost.ConfigureKestrel(k => k.Listen(System.Net.IPAddress.Loopback, 0, l => l.UseStaticLane()));
        WebApplication app = builder.Build();
        app.UseFastFiles();
        Uri address = (await CodeEndpoints.StartAsync(app)).Single();
        await using (app)
        {
            using var lane = new InstrumentRecorder(app.Services.GetRequiredService<IMeterFactory>(), "fastfiles.lane.requests");
            RawResponse fromApp = await RawHttp.SendAsync(address, "/page.txt?x=1");   // a query: handed to Kestrel, UseFastFiles answers
            RawResponse fromLane = await RawHttp.SendAsync(address, "/page.txt");
            Assert.Equal(1, await Poll.UntilAsync(() => lane.Total, 1));
            Assert.Equal("public, max-age=77", fromApp.Headers["Cache-Control"]);
            Assert.Equal("public, max-age=77", fromLane.Headers["Cache-Control"]);
            await app.StopAsync();
        }
    }

    // README: lane roots come from ConfigureStaticLane "or the FastFiles:StaticLane configuration section", and
    // UseStaticLane() without roots takes the application's options; as UseFastFiles() binds its sections itself
    // without AddFastFiles, so must the lane. Two endpoints with the application's options share one set of roots (one
    // cache: the second endpoint's request for the same file is a cache hit).
    [Fact]
    public async Task Lane_without_AddFastFiles_binds_the_StaticLane_section_and_endpoints_share_its_roots()
    {
        using var files = new TestFiles();
        byte[] content = files.Create("page.txt", 1000);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder(
            $"--FastFiles:StaticLane:Roots:0:PhysicalPath={files.Root}",
            "--FastFiles:StaticLane:Roots:0:Files:RequestPath=/lane",
            "--FastFiles:StaticLane:Roots:0:Files:CacheControl=public, max-age=55");
        builder.WebHost.ConfigureKestrel(k =>
        {
            k.Listen(System.Net.IPAddress.Loopback, 0, l => l.UseStaticLane());
            k.Listen(System.Net.IPAddress.Loopback, 0, l => l.UseStaticLane());
        });
        WebApplication app = builder.Build();
        Uri[] addresses = await CodeEndpoints.StartAsync(app);
        await using (app)
        {
            using var lane = new InstrumentRecorder(app.Services.GetRequiredService<IMeterFactory>(), "fastfiles.lane.requests");
            using var misses = new InstrumentRecorder(app.Services.GetRequiredService<IMeterFactory>(), "fastfiles.cache.misses");
            RawResponse first = await RawHttp.SendAsync(addresses[0], "/lane/page.txt");
            RawResponse second = await RawHttp.SendAsync(addresses[1], "/lane/page.txt");
            Assert.Equal(200, first.Status);
            Assert.Equal(content, first.Body);
            Assert.Equal("public, max-age=55", first.Headers["Cache-Control"]);
            Assert.Equal(content, second.Body);
            Assert.Equal(2, await Poll.UntilAsync(() => lane.Total, 2));
            Assert.Equal(1, misses.Total);
            await app.StopAsync();
        }
    }

    // README "Configuration": values that could only fail per request stop the host at start with an
    // OptionsValidationException naming the option. UseFastFiles() validates the sections it binds without AddFastFiles;
    // an app whose only FastFiles part is the lane (which binds the same sections) must stop as well.
    [Fact]
    public async Task Lane_only_app_without_AddFastFiles_stops_at_start_on_an_invalid_value()
    {
        using var files = new TestFiles();
        files.Create("page.txt", 1000);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder("--FastFiles:MaxCachedFiles=-1");
        builder.Services.ConfigureStaticLane(lane => lane.Roots.Add(new StaticLaneRootOptions { PhysicalPath = files.Root }));
        builder.WebHost.ConfigureKestrel(k => k.Listen(System.Net.IPAddress.Loopback, 0, l => l.UseStaticLane()));
        WebApplication app = builder.Build();
        await using (app)
        {
            var error = await Assert.ThrowsAsync<Microsoft.Extensions.Options.OptionsValidationException>(() => app.StartAsync());
            Assert.Contains("FastFiles:MaxCachedFiles", error.Message, StringComparison.Ordinal);
        }
    }

    // Without AddFastFiles, UseFastFiles (built from the app's services) and FastResults (run with a request's scoped
    // services) must report to one set of FastFiles instruments: a second "fastfiles.cache.entries" gauge on the same
    // meter is a duplicate instrument to exporters, and each would show only part of what the caches hold.
    [Fact]
    public async Task Without_AddFastFiles_middleware_and_results_share_one_set_of_instruments()
    {
        using var files = new TestFiles();
        files.Create("page.txt", 1000);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.WebHost.ConfigureKestrel(k => k.Listen(System.Net.IPAddress.Loopback, 0));
        WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(files.Root), RequestPath = "/files" });
        app.MapGet("/result", () => Microsoft.AspNetCore.Http.FastResults.File(files.Root, "page.txt", null, null, true, false, enableContentHashETags: true));
        Uri address = (await CodeEndpoints.StartAsync(app)).Single();
        await using (app)
        {
            IMeterFactory factory = app.Services.GetRequiredService<IMeterFactory>();
            Assert.Equal(200, (await RawHttp.SendAsync(address, "/files/page.txt")).Status);
            Assert.Equal(200, (await RawHttp.SendAsync(address, "/result")).Status);

            long entries = 0;
            int gauges = 0;
            using (var listener = new MeterListener())
            {
                listener.InstrumentPublished = (instrument, l) =>
                {
                    if (instrument.Meter.Scope == factory && instrument.Name == "fastfiles.cache.entries")
                    {
                        gauges++;
                        l.EnableMeasurementEvents(instrument);
                    }
                };
                listener.SetMeasurementEventCallback<long>((_, value, _, _) => entries += value);
                listener.Start();
                listener.RecordObservableInstruments();
            }

            Assert.Equal(1, gauges);
            Assert.Equal(2, entries);   // one entry in the middleware's cache, one in the results' cache
            await app.StopAsync();
        }
    }

    // Kestrel runs the endpoint defaults before an endpoint's configuration callback ("EndpointDefaults or
    // configureEndpoint may have added an https adapter"): an app whose defaults add TLS must not get a second TLS layer
    // from FastFiles' callback on a Kestrel:Endpoints HTTPS endpoint (the URL path already checks for this).
    [Fact]
    public async Task Configuration_endpoint_whose_defaults_added_tls_gets_no_second_tls_layer()
    {
        using var files = new TestFiles();
        files.Create("page.txt", 1000);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder("--Kestrel:Endpoints:Tls:Url=https://127.0.0.1:0");
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k =>
        {
            k.ConfigureEndpointDefaults(l => l.UseHttps(TestCertificate.Instance));
            k.UseFastFilesConnections();
        });
        WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(files.Root) });
        Uri address = (await CodeEndpoints.StartAsync(app)).Single();
        await using (app)
        {
            using var handler = new HttpClientHandler { ServerCertificateCustomValidationCallback = HttpClientHandler.DangerousAcceptAnyServerCertificateValidator };
            using var client = new HttpClient(handler) { Timeout = TimeSpan.FromSeconds(20) };
            using HttpResponseMessage response = await client.GetAsync(new Uri(address, "/page.txt"));
            Assert.Equal(System.Net.HttpStatusCode.OK, response.StatusCode);
            await app.StopAsync();
        }
    }

    // README "Configuration": negative sizes, counts or intervals stop the host at start with an
    // OptionsValidationException naming the option; the FastFiles:Kestrel section is part of that configuration.
    [Theory]
    [InlineData("FastFiles:Kestrel:DescriptorReserve", "-1")]
    [InlineData("FastFiles:Kestrel:ZeroCopySendFile:MinimumLength", "-1")]
    [InlineData("FastFiles:Kestrel:ZeroCopySendFile:RecentWriteWindow", "-00:00:01")]
    public async Task Negative_kestrel_option_stops_the_host_at_start(string key, string value)
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder("--urls", "http://127.0.0.1:0", $"--{key}={value}");
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k => k.UseFastFilesConnections(o => o.EnableZeroCopySendFile = true));
        WebApplication? app = null;
        var error = await Assert.ThrowsAsync<Microsoft.Extensions.Options.OptionsValidationException>(async () =>
        {
            app = builder.Build();   // Kestrel's options are settled while the app is built or started
            app.UseFastFiles();
            await app.StartAsync();
        });
        Assert.Contains(key.Split(':')[^1], error.Message, StringComparison.Ordinal);
        if (app is not null)
        {
            await app.DisposeAsync();
        }
    }
}
