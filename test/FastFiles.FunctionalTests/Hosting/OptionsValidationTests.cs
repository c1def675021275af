using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace FastFiles.FunctionalTests.Hosting;

/// <summary>
/// Options as an app gives them: a value that could only fail per request stops the host at start with the option
/// named; configuration binding never overrides code, whatever the order of the calls; a descriptor reserve larger than
/// the process's limit does not refuse every connection.
/// </summary>
public sealed class OptionsValidationTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    // As CodeEndpoints.CreateBuilder, with the test's files as the content root (and their wwwroot as the web root).
    private WebApplicationBuilder BuilderAtFiles(params string[] args)
    {
        WebApplicationBuilder builder = WebApplication.CreateBuilder(new WebApplicationOptions
        {
            Args = ["--hostBuilder:reloadConfigOnChange=false", .. args],
            EnvironmentName = Microsoft.Extensions.Hosting.Environments.Production,
            ContentRootPath = _files.Root,
        });
        builder.Logging.ClearProviders();
        return builder;
    }

    public static TheoryData<string, Action<FastFilesOptions>> Invalid => new()
    {
        { "MaxCachedFileSize", o => o.MaxCachedFileSize = -1 },
        // Larger than any array: every request for a file of that size failed with an OverflowException (500).
        { "MaxCachedFileSize", o => { o.MaxCachedFileSize = 10_000_000_000; o.FileCacheSizeLimit = 10_000_000_000; } },
        { "FileCacheSizeLimit", o => o.FileCacheSizeLimit = -1 },
        { "MaxCachedFiles", o => o.MaxCachedFiles = -1 },
        { "MaxOpenFiles", o => o.MaxOpenFiles = -1 },
        { "MaxRanges", o => o.MaxRanges = -1 },
        { "SynchronousReadThreshold", o => o.SynchronousReadThreshold = -5 },
        { "FileCacheRevalidationInterval", o => o.FileCacheRevalidationInterval = TimeSpan.FromSeconds(-1) },
        // Used by FastResults' dynamic compression, where it failed per request (500) instead.
        { "BrotliCompressionQuality", o => o.BrotliCompressionQuality = 20 },
        { "GzipCompressionLevel", o => o.GzipCompressionLevel = 0 },
    };

    [Theory]
    [MemberData(nameof(Invalid))]
    public async Task An_invalid_value_stops_the_host_at_start(string option, Action<FastFilesOptions> configure)
    {
        var failure = await Assert.ThrowsAsync<OptionsValidationException>(() => TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) }),
            services => services.AddFastFiles(configure)));
        Assert.Contains("FastFiles:" + option, failure.Message, StringComparison.Ordinal);
    }

    public static TheoryData<string, Action<FastStaticFileOptions>> InvalidStaticFiles => new()
    {
        // Header values Kestrel refuses when they are set, per response (a 500 for every file), and that the static
        // lane, which writes its header bytes itself, would send as they are (a header line of their own).
        { "CacheControl", o => o.CacheControl = "public, max-age=60\r\nX-Injected: 1" },
        { "DefaultContentType", o => { o.ServeUnknownFileTypes = true; o.DefaultContentType = "text/plain\n"; } },
        // Non-ASCII: Kestrel refuses it per response (a 500 for every file) and the lane wrote '?' in its place.
        { "CacheControl", o => o.CacheControl = "public, max-age=60, \u00fc" },
        // As UseStaticFiles refuses it: no request would match, every file a silent 404.
        { "RequestPath", o => o.RequestPath = "/assets/" },
        // Failed at start already, but as a RegexParseException that named no option.
        { "FingerprintPattern", o => o.FingerprintPattern = "(unclosed" },
        // Failed at start already, as an ArgumentOutOfRangeException naming a constructor parameter.
        { "DynamicCompressionMinimumSize", o => { o.EnableDynamicCompression = true; o.DynamicCompressionMinimumSize = -1; } },
        { "DynamicCompressionMaximumSize", o => { o.EnableDynamicCompression = true; o.DynamicCompressionMaximumSize = 100; } },
    };

    [Theory]
    [MemberData(nameof(InvalidStaticFiles))]
    public async Task An_invalid_static_file_option_stops_the_host_at_start(string option, Action<FastStaticFileOptions> configure)
    {
        var options = new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) };
        configure(options);
        var failure = await Assert.ThrowsAsync<OptionsValidationException>(() => TestHost.StartAsync(app => app.UseFastFiles(options)));
        Assert.Contains(option, failure.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_invalid_lane_root_option_from_configuration_stops_the_host_at_start()
    {
        _files.Create("a.txt", 100);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder(
            $"--FastFiles:StaticLane:Roots:0:PhysicalPath={_files.Root}",
            "--FastFiles:StaticLane:Roots:0:Files:DefaultContentType=text/plain\u0001");
        builder.Services.AddFastFiles();
        builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?> { ["FastFiles:StaticLane:Roots:0:Files:CacheControl"] = "max-age=60\r\nX-Injected: 1" });
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l => l.UseStaticLane()));
        WebApplication app = builder.Build();
        await using (app)
        {
            var failure = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());
            Assert.Contains("CacheControl", failure.Message, StringComparison.Ordinal);
        }
    }

    // Configuration binds an empty value as "": the lane served the content root itself, appsettings.json included.
    [Fact]
    public async Task An_empty_lane_root_path_from_configuration_stops_the_host_at_start()
    {
        _files.Write("appsettings.json", "{ \"ConnectionStrings\": { \"Db\": \"Password=secret\" } }"u8.ToArray());
        _files.Create("wwwroot/a.txt", 100);
        WebApplicationBuilder builder = BuilderAtFiles("--FastFiles:StaticLane:Roots:0:PhysicalPath=");
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l => l.UseStaticLane()));
        WebApplication app = builder.Build();
        await using (app)
        {
            app.UseFastFiles();
            var failure = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());
            Assert.Contains("FastFiles:StaticLane:Roots:0:PhysicalPath is empty", failure.Message, StringComparison.Ordinal);
        }
    }

    // As UseStaticFiles: an empty value (as configuration binds a blank one) is no header, not an empty one
    // ("Content-Type: " is no media type, RFC 9110 8.3), from the middleware and the lane alike.
    [Fact]
    public async Task Empty_header_options_from_configuration_send_no_header()
    {
        _files.Create("wwwroot/a.txt", 100);
        _files.Create("wwwroot/b.unknownext", 100);
        WebApplicationBuilder builder = BuilderAtFiles(
            "--FastFiles:StaticFiles:CacheControl=", "--FastFiles:StaticFiles:DefaultContentType=", "--FastFiles:StaticFiles:ServeUnknownFileTypes=true");
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k =>
        {
            k.Listen(IPAddress.Loopback, 0);
            k.Listen(IPAddress.Loopback, 0, l => l.UseStaticLane(o => o.Roots.Add(new StaticLaneRootOptions())));
        });
        WebApplication app = builder.Build();
        await using (app)
        {
            app.UseFastFiles();
            Uri[] at = await CodeEndpoints.StartAsync(app);
            Assert.Equal(2, at.Length);
            foreach (Uri endpoint in at)
            {
                foreach (string path in new[] { "/a.txt", "/b.unknownext", "/b.unknownext" })
                {
                    RawResponse response = await RawHttp.SendAsync(endpoint, path);
                    Assert.Equal(200, response.Status);
                    Assert.Equal(100, response.Body.Length);
                    Assert.False(response.Headers.ContainsKey("Cache-Control"), $"{endpoint}{path}: Cache-Control: [{response.Headers.GetValueOrDefault("Cache-Control")}]");
                    if (path == "/a.txt")
                    {
                        Assert.Equal("text/plain", response.Headers["Content-Type"]);
                    }
                    else
                    {
                        Assert.False(response.Headers.ContainsKey("Content-Type"), $"{endpoint}{path}: Content-Type: [{response.Headers.GetValueOrDefault("Content-Type")}]");
                    }
                }
            }
        }
    }

    [Theory]
    [InlineData("MinimumLength")]
    [InlineData("CachedMinimumLength")]
    [InlineData("RecentWriteWindow")]
    public async Task An_invalid_send_path_setting_given_in_code_stops_the_host_at_start(string option)
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l => l.UseZeroCopySendFile(o =>
        {
            switch (option)
            {
                case "MinimumLength": o.MinimumLength = -1; break;
                case "CachedMinimumLength": o.CachedMinimumLength = -1; break;
                default: o.RecentWriteWindow = TimeSpan.FromSeconds(-1); break;
            }
        })));
        WebApplication app = builder.Build();
        await using (app)
        {
            var failure = await Assert.ThrowsAsync<OptionsValidationException>(() => app.StartAsync());
            Assert.Contains(option + " must not be negative", failure.Message, StringComparison.Ordinal);
        }
    }

    // A relative lane root is under the content root, as ASP.NET Core resolves the web root: not under the directory the
    // process was started in (which has no "www" here, so the host would not start).
    [Fact]
    public async Task A_relative_lane_root_is_under_the_content_root()
    {
        byte[] bytes = _files.Create("www/a.txt", 300);
        await using TestHost host = await TestHost.StartAsync(
            app => { },
            contentRoot: _files.Root,
            configureEndpoints: l => l.UseStaticLane(o => o.Roots.Add(new StaticLaneRootOptions { PhysicalPath = "www" })));
        using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/a.txt");
        Assert.Equal(System.Net.HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(bytes, await response.Content.ReadAsByteArrayAsync());
    }

    // As UseStaticFiles: no web root on disk is named in a warning (event 2012), not left to silent 404s.
    [Fact]
    public async Task A_missing_web_root_is_named_in_a_warning()
    {
        var logs = new LogCapture();
        await using TestHost host = await TestHost.StartAsync(
            app => app.UseFastFiles(),
            services => services.AddSingleton<Microsoft.Extensions.Logging.ILoggerProvider>(logs),
            contentRoot: _files.Root);
        using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/a.txt");
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        LogCapture.Entry warning = Assert.Single(logs.WithId(2012));
        Assert.Contains(Path.Combine(_files.Root, "wwwroot"), warning.Message, StringComparison.Ordinal);
    }

    // A FastResults root built from request data that names no directory (a tenant that does not exist) is a 404 and makes
    // no file cache: no watcher is tried on it (event 5003), no place among the kept roots is taken.
    [Fact]
    public async Task A_result_root_that_names_no_directory_makes_no_cache()
    {
        var logs = new LogCapture();
        byte[] bytes = _files.Create("t1/a.css", 2_000);
        await using TestHost host = await TestHost.StartAsync(
            app => app.MapGet("/t/{tenant}/{name}", (string tenant, string name) => FastResults.File(Path.Combine(_files.Root, tenant), name, enableDynamicCompression: true)),
            services => services.AddSingleton<Microsoft.Extensions.Logging.ILoggerProvider>(logs));

        using (HttpResponseMessage missing = await host.SendAsync(Transport.Http11, "/t/nobody/a.css"))
        {
            Assert.Equal(HttpStatusCode.NotFound, missing.StatusCode);
        }

        using (HttpResponseMessage found = await host.SendAsync(Transport.Http11, "/t/t1/a.css"))
        {
            Assert.Equal(HttpStatusCode.OK, found.StatusCode);
            Assert.Equal(bytes, await found.Content.ReadAsByteArrayAsync());
        }

        Assert.Empty(logs.WithId(5003));
    }

    // A revalidation interval of days is valid: the cache's sweep timer (ten intervals) stays within a timer's range, so
    // the host starts and FastResults' caches (made on first use) do not fail every request.
    [Fact]
    public async Task A_revalidation_interval_of_days_starts_and_serves()
    {
        byte[] bytes = _files.Create("a.css", 2_000);
        await using TestHost host = await TestHost.StartAsync(
            app =>
            {
                app.MapGet("/result/{name}", (string name) => FastResults.File(_files.Root, name, enableDynamicCompression: true));
                app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) });
            },
            services => services.AddFastFiles(o => o.FileCacheRevalidationInterval = TimeSpan.FromDays(7)));
        foreach (string path in new[] { "/a.css", "/result/a.css" })
        {
            using HttpResponseMessage response = await host.SendAsync(Transport.Http11, path);
            Assert.Equal(System.Net.HttpStatusCode.OK, response.StatusCode);
            Assert.Equal(bytes, await response.Content.ReadAsByteArrayAsync());
        }
    }

    [Fact]
    public async Task A_per_file_limit_bounded_by_the_cache_budget_starts()
    {
        // "Any size": the budget (64 MiB by default) still bounds what one cached body may take.
        byte[] file = _files.Create("a.bin", 100_000);
        await using TestHost host = await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true }),
            services => services.AddFastFiles(o => o.MaxCachedFileSize = long.MaxValue));
        RawResponse response = await RawHttp.SendAsync(host.Http, "/a.bin");
        Assert.Equal(200, response.Status);
        Assert.Equal(file, response.Body);
    }

    [Fact]
    public async Task Without_AddFastFiles_UseFastFiles_validates_at_start_and_results_are_not_failed_per_request()
    {
        // UseFastFiles resolves the options when the pipeline is built: the host stops there.
        await Assert.ThrowsAsync<OptionsValidationException>(() => TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) }),
            services => services.Configure<FastFilesOptions>(o => o.MaxRanges = -1)));

        // A results-only app resolves them on its first request; a value its results do not use must not turn every
        // answer into a 500.
        byte[] file = _files.Create("a.txt", 100);
        await using TestHost host = await TestHost.StartAsync(
            app => app.MapGet("/r", () => FastResults.File(_files.Root, "a.txt")),
            services => services.Configure<FastFilesOptions>(o => o.GzipCompressionLevel = 0));
        for (int i = 0; i < 2; i++)
        {
            RawResponse response = await RawHttp.SendAsync(host.Http, "/r");
            Assert.Equal(200, response.Status);
            Assert.Equal(file, response.Body);
        }
    }

    [Fact]
    public async Task Code_configuration_wins_over_binding_whatever_the_call_order()
    {
        _files.Create("a.txt", 10);
        IConfiguration configuration = new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["StaticFiles:CacheControl"] = "from-config",
            ["MaxRanges"] = "5",
        }).Build();
        await using TestHost host = await TestHost.StartAsync(
            app => app.UseFastFiles(),
            services =>
            {
                // Before AddFastFiles: the binding it adds still runs first.
                services.ConfigureFastStaticFiles(o =>
                {
                    o.CacheControl = "from-code";
                    o.FileProvider = new PhysicalFileProvider(_files.Root);
                });
                services.Configure<FastFilesOptions>(o => o.MaxRanges = 7);
                services.AddFastFiles(configuration);
            });

        using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/a.txt");
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal("from-code", response.Header("Cache-Control"));
        Assert.Equal(7, host.Services.GetRequiredService<IOptions<FastFilesOptions>>().Value.MaxRanges);
    }

    [Fact]
    public async Task A_reserve_over_the_descriptor_limit_does_not_refuse_every_connection()
    {
        byte[] file = _files.Create("a.txt", 1000);
        await using TestHost host = await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) }),
            services => services.AddFastFiles(),
            configureKestrel: k => k.UseFastFilesConnections(o => o.DescriptorReserve = int.MaxValue));

        for (int i = 0; i < 3; i++)
        {
            RawResponse response = await RawHttp.SendAsync(host.Http, "/a.txt");
            Assert.Equal(200, response.Status);
            Assert.Equal(file, response.Body);
        }
    }
}
