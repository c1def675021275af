using System.Globalization;
using System.Net;
using System.Net.Sockets;
using FastFiles.Files;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Hosting;

/// <summary>
/// A host disposed without <c>StopAsync</c> (<c>await using</c> after <c>StartAsync</c>, the usual TestServer pattern,
/// or <c>Run</c> after a failed start) never raises <c>ApplicationStopped</c>. FastFiles' caches, their inotify watches
/// and kept descriptors, and the lane's roots must still go with the host: each leaked host held an inotify instance,
/// and a test suite ran out of the user's 128 after about 64 hosts, failing in <c>WebApplication.CreateBuilder</c>.
/// </summary>
public sealed class DisposeWithoutStopTests : IDisposable
{
    private readonly TestFiles _middleware = new();
    private readonly TestFiles _lane = new();
    private readonly TestFiles _results = new();

    public void Dispose()
    {
        _middleware.Dispose();
        _lane.Dispose();
        _results.Dispose();
    }

    private WebApplication Build(int laneOnlyPort, int secondPort)
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k =>
        {
            k.Listen(IPAddress.Loopback, laneOnlyPort, l => l.UseStaticLane(o => o.Roots.Add(new StaticLaneRootOptions
            {
                PhysicalPath = _lane.Root,
                Files = new FastStaticFileOptions { RequestPath = "/lane", ServeUnknownFileTypes = true },
            })));
            if (secondPort >= 0)
            {
                k.Listen(IPAddress.Loopback, secondPort);
            }
        });
        WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_middleware.Root), ServeUnknownFileTypes = true });
        // Results keep a cache (and watch their root) for content hashes and compression.
        app.MapGet("/results/{**path}", (string path) => FastResults.File(_results.Root, path, "application/octet-stream", enableContentHashETags: true));
        return app;
    }

    [Fact]
    public async Task A_started_host_disposed_without_a_stop_releases_watches_and_descriptors()
    {
        byte[] big = _middleware.Create("big.bin", 1024 * 1024);
        byte[] resultsBig = _results.Create("big.bin", 1024 * 1024, seed: 2);
        byte[] small = _lane.Create("small.txt", 2000);
        byte[] resultsSmall = _results.Create("small.txt", 2000, seed: 3);
        WebApplication app = Build(0, -1);
        Uri[] addresses = await CodeEndpoints.StartAsync(app);
        RawResponse lane = await RawHttp.SendAsync(addresses[0], "/lane/small.txt");
        RawResponse middleware = await RawHttp.SendAsync(addresses[0], "/big.bin");
        RawResponse results = await RawHttp.SendAsync(addresses[0], "/results/big.bin");
        Assert.Equal(small, lane.Body);
        Assert.Equal(big, middleware.Body);
        Assert.Equal(resultsBig, results.Body);
        Assert.Equal(resultsSmall, (await RawHttp.SendAsync(addresses[0], "/results/small.txt")).Body);

        // While it runs: each root is watched, and the large files' descriptors are kept for the next request.
        Assert.True(InotifyWatches.Watching(_middleware.Root), "middleware root not watched");
        Assert.True(InotifyWatches.Watching(_lane.Root), "lane root not watched");
        Assert.True(InotifyWatches.Watching(_results.Root), "results root not watched");
        Assert.NotEmpty(OpenFileDescriptors.TargetsUnder(_middleware.Root));
        Assert.NotEmpty(OpenFileDescriptors.TargetsUnder(_results.Root));

        await app.DisposeAsync();

        Assert.False(InotifyWatches.Watching(_middleware.Root), "middleware root still watched");
        Assert.False(InotifyWatches.Watching(_lane.Root), "lane root still watched");
        Assert.False(InotifyWatches.Watching(_results.Root), "results root still watched");
        await OpenFileDescriptors.AssertNoneUnderAsync(_middleware.Root);
        await OpenFileDescriptors.AssertNoneUnderAsync(_results.Root);
    }

    [Fact]
    public async Task A_host_whose_start_failed_releases_the_roots_it_built()
    {
        _middleware.Create("a.txt", 100);
        _lane.Create("small.txt", 2000);
        using var taken = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        taken.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        taken.Listen();
        // The lane's endpoint binds first and builds its root; the second endpoint's port is in use, so the start fails.
        WebApplication app = Build(0, ((IPEndPoint)taken.LocalEndPoint!).Port);
        await Assert.ThrowsAnyAsync<IOException>(() => app.StartAsync());
        Assert.True(InotifyWatches.Watching(_lane.Root), "lane root not watched");
        Assert.True(InotifyWatches.Watching(_middleware.Root), "middleware root not watched");

        await app.DisposeAsync();

        Assert.False(InotifyWatches.Watching(_lane.Root), "lane root still watched");
        Assert.False(InotifyWatches.Watching(_middleware.Root), "middleware root still watched");
    }

    /// <summary>Whether any inotify instance of this process watches a directory, from <c>/proc/self/fdinfo</c>.</summary>
    private static class InotifyWatches
    {
        public static bool Watching(string directory)
        {
            Assert.True(FileStamp.TryGet(directory, out FileStamp stamp));
            string inode = "ino:" + stamp.Inode.ToString("x", CultureInfo.InvariantCulture) + " ";
            foreach (string info in Directory.EnumerateFiles("/proc/self/fdinfo"))
            {
                string text;
                try
                {
                    text = File.ReadAllText(info);
                }
                catch (IOException)
                {
                    continue; // closed while we looked
                }

                foreach (string line in text.Split('\n'))
                {
                    if (line.StartsWith("inotify wd:", StringComparison.Ordinal) && line.Contains(inode, StringComparison.Ordinal))
                    {
                        return true;
                    }
                }
            }

            return false;
        }
    }
}
