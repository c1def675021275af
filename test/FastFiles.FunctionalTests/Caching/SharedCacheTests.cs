using System.Diagnostics.Metrics;
using System.Net;
using FastFiles.Caching;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Options;

namespace FastFiles.FunctionalTests.Caching;

/// <summary>
/// README "Static lane": a lane root left to UseFastFiles' root and options shares UseFastFiles' file cache. The lane
/// answers HTTP/1.1 and UseFastFiles answers what the lane hands off and every HTTP/2 request, so without sharing the
/// same hot files are held twice. Here a file read over the lane and then over h2c is built once, held once, and both
/// see it change; a UseFastFiles that serves dotfiles keeps its own cache, so the lane never finds one in it.
/// </summary>
public sealed class SharedCacheTests
{
    private sealed class App : IAsyncDisposable
    {
        private long _appRequests;

        public required WebApplication Web { get; init; }

        public required Uri Lane { get; init; }

        public required Uri H2c { get; init; }

        public long AppRequests => Interlocked.Read(ref _appRequests);

        public SharedFileCaches Caches => Web.Services.GetRequiredService<IOptions<SharedFileCaches>>().Value;

        public IMeterFactory Meters => Web.Services.GetRequiredService<IMeterFactory>();

        public static async Task<App> StartAsync(string root, bool addFastFiles, bool serveDotFiles = false, string defaultFile = "index.html")
        {
            WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
            if (addFastFiles)
            {
                builder.Services.AddFastFiles();
            }

            // The sample's wiring: UseFastFiles' options from the container, a lane root that takes them.
            builder.Services.ConfigureFastStaticFiles(o =>
            {
                o.FileProvider = new PhysicalFileProvider(root);
                o.ServeDotFiles = serveDotFiles;
                o.DefaultFileNames = [defaultFile];
            });
            builder.Services.ConfigureStaticLane(lane => lane.Roots.Add(new StaticLaneRootOptions()));
            builder.WebHost.ConfigureKestrel(k =>
            {
                k.Listen(IPAddress.Loopback, 0, l => l.UseStaticLane());
                k.Listen(IPAddress.Loopback, 0, l =>
                {
                    l.Protocols = HttpProtocols.Http2;
                    l.UseStaticLane();   // passes HTTP/2 straight through
                });
            });
            WebApplication web = builder.Build();
            App? app = null;
            web.Use((context, next) =>
            {
                Interlocked.Increment(ref app!._appRequests);
                return next(context);
            });
            web.UseFastFiles();
            Uri[] addresses = await CodeEndpoints.StartAsync(web);
            app = new App { Web = web, Lane = addresses[0], H2c = addresses[1] };
            return app;
        }

        public async Task<(HttpStatusCode Status, byte[] Body)> GetH2Async(string path)
        {
            using var client = new HttpClient();
            using var request = new HttpRequestMessage(HttpMethod.Get, new Uri(H2c, path))
            {
                Version = HttpVersion.Version20,
                VersionPolicy = HttpVersionPolicy.RequestVersionExact,
            };
            using HttpResponseMessage response = await client.SendAsync(request);
            Assert.Equal(HttpVersion.Version20, response.Version);
            return (response.StatusCode, await response.Content.ReadAsByteArrayAsync());
        }

        public async ValueTask DisposeAsync()
        {
            await Web.StopAsync();
            await Web.DisposeAsync();
        }
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task Lane_and_UseFastFiles_over_one_root_build_and_hold_a_file_once(bool addFastFiles)
    {
        using var files = new TestFiles();
        byte[] v1 = files.Create("page.bin", 8000, seed: 1);
        App app = await App.StartAsync(files.Root, addFastFiles);
        FileCache cache;
        await using (app)
        {
            using var misses = new InstrumentRecorder(app.Meters, "fastfiles.cache.misses");
            using var lane = new InstrumentRecorder(app.Meters, "fastfiles.lane.requests");

            RawResponse first = await RawHttp.SendAsync(app.Lane, "/page.bin");
            Assert.Equal(200, first.Status);
            Assert.Equal(v1, first.Body);
            Assert.Equal(1, await Poll.UntilAsync(() => lane.Total, 1));
            Assert.Equal(0, app.AppRequests);

            (HttpStatusCode status, byte[] body) = await app.GetH2Async("/page.bin");
            Assert.Equal(HttpStatusCode.OK, status);
            Assert.Equal(v1, body);
            Assert.Equal(1, app.AppRequests);

            // One build for both, one copy of the bytes, one cache for the root.
            Assert.Equal(1, misses.Total);
            cache = Assert.Single(app.Caches.Held());
            Assert.Equal(8000, cache.BytesHeld);
            Assert.Equal(1, cache.Count);

            // One watcher drops the entry for both: each sees the new version.
            byte[] v2 = files.Create("page.bin", 9000, seed: 2);
            RawResponse fromLane = await Poll.EventuallyAsync(
                () => RawHttp.SendAsync(app.Lane, "/page.bin"), r => r.Body.SequenceEqual(v2), TimeSpan.FromSeconds(10));
            Assert.Equal(v2, fromLane.Body);
            (HttpStatusCode, byte[] Body) fromH2 = await app.GetH2Async("/page.bin");
            Assert.Equal(v2, fromH2.Body);
            // The old bytes went with their entry; a late change notification may drop the new one too, never add a copy.
            Assert.InRange(cache.BytesHeld, 0, 9000);
        }

        // Both users let go when the app stops: the cache is disposed and holds nothing.
        Assert.Equal(0, cache.BytesHeld);
        Assert.Equal(0, cache.Count);
    }

    [Fact]
    public async Task UseFastFiles_that_serves_dotfiles_keeps_its_own_cache_and_the_lane_still_hands_dotfiles_off()
    {
        using var files = new TestFiles();
        // The lane's parser hands any "/." path to Kestrel before a lookup; a directory whose default file is a dotfile
        // is the one request for a dotfile that reaches the lane's cache lookup, under the directory's path.
        byte[] index = files.Create(".index.html", 500, seed: 3);
        byte[] page = files.Create("page.txt", 600, seed: 4);
        App app = await App.StartAsync(files.Root, addFastFiles: true, serveDotFiles: true, defaultFile: ".index.html");
        await using (app)
        {
            using var lane = new InstrumentRecorder(app.Meters, "fastfiles.lane.requests");

            // UseFastFiles caches "/" as its dotfile default file; the lane must not find that entry.
            (HttpStatusCode status, byte[] body) = await app.GetH2Async("/");
            Assert.Equal(HttpStatusCode.OK, status);
            Assert.Equal(index, body);
            Assert.Equal(1, app.AppRequests);

            RawResponse viaLaneEndpoint = await RawHttp.SendAsync(app.Lane, "/");
            Assert.Equal(200, viaLaneEndpoint.Status);
            Assert.Equal(index, viaLaneEndpoint.Body);
            Assert.Equal(2, app.AppRequests);   // handed off to the app, which serves dotfiles here
            Assert.Equal(0, lane.Total);

            RawResponse pageViaLane = await RawHttp.SendAsync(app.Lane, "/page.txt");
            Assert.Equal(page, pageViaLane.Body);
            Assert.Equal(1, await Poll.UntilAsync(() => lane.Total, 1));
            Assert.Equal(2, app.Caches.Held().Length);
        }
    }
    [Fact]
    public async Task A_lane_whose_later_root_fails_gives_back_the_cache_its_earlier_root_took()
    {
        using var files = new TestFiles();
        files.Create("page.txt", 100, seed: 5);
        string missing = Path.Combine(files.Root, "not-there");
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles();
        builder.Services.ConfigureFastStaticFiles(o => o.FileProvider = new PhysicalFileProvider(files.Root));
        builder.Services.ConfigureStaticLane(lane =>
        {
            lane.Roots.Add(new StaticLaneRootOptions());   // shares the application's cache key
            lane.Roots.Add(new StaticLaneRootOptions { PhysicalPath = missing, Files = new FastStaticFileOptions { RequestPath = "/other" } });
        });
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l => l.UseStaticLane()));
        await using WebApplication web = builder.Build();

        // The second root stops the endpoint from binding, and so the host from starting.
        Exception failed = await Assert.ThrowsAnyAsync<Exception>(() => web.StartAsync());
        Assert.Contains("not-there", failed.ToString(), StringComparison.Ordinal);

        // Nothing will stop the first root: it must have let go of the shared cache already.
        Assert.Empty(web.Services.GetRequiredService<IOptions<SharedFileCaches>>().Value.Held());
    }
}
