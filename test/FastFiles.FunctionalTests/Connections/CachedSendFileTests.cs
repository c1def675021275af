using System.Diagnostics.Metrics;
using System.Net;
using System.Text;
using System.Text.RegularExpressions;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// Bodies the file cache holds, from <c>ZeroCopySendFileOptions.CachedMinimumLength</c> (32 KiB) on, go by sendfile(2)
/// from the descriptor the cache keeps, through <c>UseFastFiles</c> on Kestrel's path and through the static lane; the
/// bytes equal those of an endpoint that copies them from memory (except Date), shorter bodies and files written just
/// now stay copies, and a file changed behind the cache is never sent under the old headers.
/// </summary>
[Collection(SendPathCollection.Name)]
public sealed partial class CachedSendFileTests : IAsyncLifetime
{
    private readonly TestFiles _files = new();

    // Outside the served root: written through a hard link, a file changes without the cache's watcher seeing it.
    private readonly TestFiles _outside = new();
    private readonly Dictionary<string, byte[]> _contents = [];
    private WebApplication _app = null!;
    private Uri _copy = null!;
    private Uri _sendPath = null!;
    private Uri _lane = null!;

    public async Task InitializeAsync()
    {
        // RecentWriteWindow is two hours here: "fresh.bin" (an hour old) counts as just written, the others are at rest.
        foreach ((string name, int size) in new[] { ("c40k.bin", 40_000), ("c20k.bin", 20_000), ("c64k.bin", 64 * 1024), ("fresh.bin", 40_000), ("changing0.bin", 50_000), ("changing1.bin", 50_000), ("c128k.bin", 128 * 1024) })
        {
            _contents[name] = _files.Create(name, size, seed: size + name.Length);
            File.SetLastWriteTimeUtc(_files.PathOf(name), DateTime.UtcNow.AddHours(name == "fresh.bin" ? -1 : -5));
        }

        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        // Entries are re-checked only on a file-system notification here, so a change the watcher does not see stays
        // unknown to the cache for the whole test.
        builder.Services.AddFastFiles(o =>
        {
            o.FileCacheRevalidationInterval = TimeSpan.FromMinutes(10);
            o.MaxCachedFileSize = 128 * 1024;
        });
        FastStaticFileOptions Files() => new() { FileProvider = new PhysicalFileProvider(_files.Root) };
        builder.WebHost.ConfigureKestrel(k =>
        {
            k.Listen(IPAddress.Loopback, 0, l => l.Protocols = HttpProtocols.Http1);
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.FromHours(2));
            });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseZeroCopySendFile(o => o.RecentWriteWindow = TimeSpan.FromHours(2)).UseStaticLane(o => o.Roots.Add(new StaticLaneRootOptions { PhysicalPath = _files.Root, Files = Files() }));
            });
        });
        _app = builder.Build();
        _app.UseFastFiles(Files());
        Uri[] addresses = await CodeEndpoints.StartAsync(_app);
        (_copy, _sendPath, _lane) = (addresses[0], addresses[1], addresses[2]);
    }

    public async Task DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
        _files.Dispose();
        _outside.Dispose();
    }

    private IMeterFactory Meters => _app.Services.GetRequiredService<IMeterFactory>();

    // Pipelined in one write: whole bodies, ranges, HEAD, a 304, a body under the threshold, a file written just now.
    private static byte[] Burst(string etag) => Encoding.ASCII.GetBytes(
        LaneHost.Request("GET", "/c40k.bin")
        + LaneHost.Request("GET", "/c40k.bin", "Range: bytes=100-39000\r\n")
        + LaneHost.Request("GET", "/c20k.bin")
        + LaneHost.Request("HEAD", "/c40k.bin")
        + LaneHost.Request("GET", "/c40k.bin", $"If-None-Match: {etag}\r\n")
        + LaneHost.Request("GET", "/c64k.bin", "Range: bytes=-33000\r\n")
        + LaneHost.Request("GET", "/fresh.bin")
        + LaneHost.Request("GET", "/c64k.bin", "Connection: close\r\n"));

    [Fact]
    public async Task Cached_bodies_from_the_threshold_on_go_by_sendfile_and_match_the_copied_bytes()
    {
        RawResponse first = await RawHttp.SendAsync(_copy, "/c40k.bin");
        Assert.Equal(_contents["c40k.bin"], first.Body);
        byte[] burst = Burst(first.Headers["ETag"]);
        string expected = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(_copy, [burst]));
        Assert.Equal(8, Regex.Count(expected, "HTTP/1.1 (200|206|304) "));

        // Bodies and ranges of at least 32 KiB of the files at rest (the 38,901-byte range too); not the 20 KB file, the
        // HEAD, the 304 or the file written recently.
        long expectedSendfile = 40_000 + 38_901 + 33_000 + (64 * 1024);
        // The rest of the bodies (the 20 KB file, the file written recently) are copies from memory, counted as copies
        // (they were not counted at all).
        const long ExpectedCopy = 20_000 + 40_000;
        foreach (Uri endpoint in new[] { _sendPath, _lane })
        {
            using var sendfile = new InstrumentRecorder(Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
            using var copy = new InstrumentRecorder(Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "copy"));
            string actual = LaneHost.WithoutDates(await LaneHost.ExchangeAsync(endpoint, [burst]));
            Assert.Equal(expected, actual);
            Assert.Equal(expectedSendfile, await Poll.UntilAsync(() => sendfile.Total, expectedSendfile));
            Assert.Equal(ExpectedCopy, await Poll.UntilAsync(() => copy.Total, ExpectedCopy));
        }
    }

    // fastfiles.cache.hits and .misses count requests: one a lane hands to the app is counted where the app answers it,
    // not also by the lane's look-up before (a 404 and a multipart range counted twice).
    [Fact]
    public async Task A_request_the_lane_hands_off_counts_one_cache_lookup()
    {
        await RawHttp.SendAsync(_lane, "/c40k.bin");
        foreach ((string target, string? headers, int status) in new (string, string?, int)[]
        {
            ("/missing.bin", null, 404),
            ("/c40k.bin", "Range: bytes=0-9,20-29\r\n", 206),
            ("/c40k.bin", null, 200),
        })
        {
            using var hits = new InstrumentRecorder(Meters, "fastfiles.cache.hits");
            using var misses = new InstrumentRecorder(Meters, "fastfiles.cache.misses");
            RawResponse response = await RawHttp.SendAsync(_lane, target, extraHeaders: headers);
            Assert.Equal(status, response.Status);
            Assert.Equal(1, hits.Total + misses.Total);
        }
    }

    // A multipart body of a cached file whose parts are on average as long as CachedMinimumLength goes by sendfile from
    // the kept descriptor, on Kestrel's path and after the lane hands it off (the lane answers single ranges only);
    // shorter parts stay copies from memory, even when the whole body is longer than the threshold.
    [Fact]
    public async Task Cached_multipart_bodies_with_parts_from_the_threshold_on_go_by_sendfile_and_match_the_copied_bytes()
    {
        byte[] file = _contents["c128k.bin"];
        const string Long = "Range: bytes=0-39999,50000-89999,-35000\r\n";
        const string Medium = "Range: bytes=0-19999,30000-49999\r\n";
        const string Short = "Range: bytes=0-9,100-109\r\n";
        RawResponse longCopy = await RawHttp.SendAsync(_copy, "/c128k.bin", extraHeaders: Long);
        RawResponse mediumCopy = await RawHttp.SendAsync(_copy, "/c128k.bin", extraHeaders: Medium);
        RawResponse shortCopy = await RawHttp.SendAsync(_copy, "/c128k.bin", extraHeaders: Short);
        Assert.True(mediumCopy.Body.Length > 32 * 1024, "the medium body must pass the threshold as a whole");
        foreach (Uri endpoint in new[] { _sendPath, _lane })
        {
            using var sendfile = new InstrumentRecorder(Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
            RawResponse sent = await RawHttp.SendAsync(endpoint, "/c128k.bin", extraHeaders: Long);
            Assert.Equal(206, sent.Status);
            Assert.Equal(SameBoundary(longCopy, sent), Encoding.Latin1.GetString(sent.Body));
            Assert.Equal(40_000 + 40_000 + 35_000, await Poll.UntilAsync(() => sendfile.Total, 115_000));
            Assert.True(sent.Body.AsSpan().IndexOf(file.AsSpan(50_000, 40_000)) > 0, "the second part's bytes");

            foreach ((string range, RawResponse copy) in new[] { (Medium, mediumCopy), (Short, shortCopy) })
            {
                RawResponse copied = await RawHttp.SendAsync(endpoint, "/c128k.bin", extraHeaders: range);
                Assert.Equal(206, copied.Status);
                Assert.Equal(SameBoundary(copy, copied), Encoding.Latin1.GetString(copied.Body));
            }

            Assert.Equal(115_000, sendfile.Total);
        }

        // The copied body with the other response's boundary in place of its own.
        static string SameBoundary(RawResponse copy, RawResponse other)
        {
            string Boundary(RawResponse r) => r.Headers["Content-Type"]["multipart/byteranges; boundary=".Length..];
            Assert.StartsWith("multipart/byteranges; boundary=", other.Headers["Content-Type"], StringComparison.Ordinal);
            return Encoding.Latin1.GetString(copy.Body).Replace(Boundary(copy), Boundary(other), StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task Setting_the_threshold_past_the_cache_limit_keeps_every_cached_body_in_memory()
    {
        (WebApplication app, Uri address) = await StartWithThresholdAsync(long.MaxValue);
        await using WebApplication _ = app;
        using var sendfile = new InstrumentRecorder(app.Services.GetRequiredService<IMeterFactory>(), "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        for (int i = 0; i < 3; i++)
        {
            Assert.Equal(_contents["c64k.bin"], (await RawHttp.SendAsync(address, "/c64k.bin")).Body);
        }

        Assert.Equal(0, sendfile.Total);
        await app.StopAsync();
    }

    // A file rewritten in place behind the cache (same length, a time still outside RecentWriteWindow, as a deploy tool
    // might leave it): every response carries the bytes of the version its ETag names, whichever version that is.
    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    public async Task A_file_changed_behind_the_cache_is_never_sent_under_the_old_headers(int lane)
    {
        Uri endpoint = lane == 1 ? _lane : _sendPath;
        string name = $"changing{lane}.bin";
        byte[] before = _contents[name];
        byte[] after = [.. before.Select(b => (byte)(b ^ 0x5A))];
        RawResponse old = await RawHttp.SendAsync(endpoint, "/" + name);
        Assert.Equal(before, old.Body);
        string oldTag = old.Headers["ETag"];

        string path = _files.PathOf(name);
        await using (var stream = new FileStream(path, FileMode.Open, FileAccess.Write))
        {
            await stream.WriteAsync(after);
        }

        File.SetLastWriteTimeUtc(path, DateTime.UtcNow.AddHours(-4));
        bool sawNew = false;
        for (int i = 0; i < 200 && !sawNew; i++)
        {
            RawResponse response = await RawHttp.SendAsync(endpoint, "/" + name);
            Assert.Equal(200, response.Status);
            sawNew = response.Headers["ETag"] != oldTag;
            Assert.Equal(sawNew ? after : before, response.Body);
            if (!sawNew)
            {
                await Task.Delay(10);
            }
        }

        // The cache sees the change (inotify) and serves the new version, by sendfile again. The write and the restored
        // time are two changes: a request between the cache seeing one and the other meets a version written just now
        // (RecentWriteWindow), whose body goes from memory, so the new version is asked for until it settles.
        Assert.True(sawNew, "the cache kept the old version");
        using var sendfile = new InstrumentRecorder(Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        long sent = await Poll.EventuallyAsync(
            async () =>
            {
                Assert.Equal(after, (await RawHttp.SendAsync(endpoint, "/" + name)).Body);
                return sendfile.Total;
            },
            total => total >= after.Length,
            TimeSpan.FromSeconds(30));
        Assert.True(sent >= after.Length, $"The new version never went by sendfile ({sent} bytes did).");
    }

    // A file rewritten in place through a hard link outside the root, its length and modification time restored (as
    // `cp -p` or `touch -d` leave it): no notification, and the send path's own look before the last chunk (length
    // and modification time) cannot see it either. Only the check of the kept descriptor against the cached version
    // (inode and change time) does: the cached bytes must go out, never the new ones under the old headers.
    [Theory]
    [InlineData(0)]
    [InlineData(1)]
    public async Task A_change_no_notification_reports_is_caught_before_the_descriptor_is_used(int lane)
    {
        Uri endpoint = lane == 1 ? _lane : _sendPath;
        byte[] before = _outside.Create($"orig{lane}.bin", 40_000, seed: 7 + lane);
        DateTime modified = DateTime.UtcNow.AddHours(-5);
        File.SetLastWriteTimeUtc(_outside.PathOf($"orig{lane}.bin"), modified);
        string name = $"linked{lane}.bin";
        using (var ln = System.Diagnostics.Process.Start("ln", [_outside.PathOf($"orig{lane}.bin"), _files.PathOf(name)]))
        {
            await ln.WaitForExitAsync();
            Assert.Equal(0, ln.ExitCode);
        }

        using var sendfile = new InstrumentRecorder(Meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        RawResponse first = await RawHttp.SendAsync(endpoint, "/" + name);
        Assert.Equal(before, first.Body);
        Assert.Equal(before.Length, await Poll.UntilAsync(() => sendfile.Total, before.Length));

        byte[] after = [.. before.Select(b => (byte)~b)];
        await using (var stream = new FileStream(_outside.PathOf($"orig{lane}.bin"), FileMode.Open, FileAccess.Write))
        {
            await stream.WriteAsync(after);
        }

        File.SetLastWriteTimeUtc(_outside.PathOf($"orig{lane}.bin"), modified);
        for (int i = 0; i < 3; i++)
        {
            RawResponse response = await RawHttp.SendAsync(endpoint, "/" + name);
            Assert.Equal(200, response.Status);
            Assert.Equal(first.Headers["ETag"], response.Headers["ETag"]);
            Assert.Equal(before, response.Body);
        }

        // Those went from memory: sendfile counted only the first response.
        Assert.Equal(before.Length, sendfile.Total);
    }

    // With one descriptor slot, building a second entry retires the first one's descriptor: the lane then sends that
    // body from memory (no open per request). An h2c stream never leases the descriptor (the send path would decline
    // it as HTTP/2 and count a fallback).
    [Fact]
    public async Task Without_its_descriptor_a_cached_body_is_sent_from_memory_and_h2c_never_leases_one()
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles(o => o.MaxOpenFiles = 1);
        builder.WebHost.ConfigureKestrel(k =>
        {
            void Lane(StaticLaneOptions o) => o.Roots.Add(new StaticLaneRootOptions { PhysicalPath = _files.Root, Files = new() { FileProvider = new PhysicalFileProvider(_files.Root) } });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                l.UseZeroCopySendFile().UseStaticLane(Lane);
            });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http2;
                l.UseZeroCopySendFile();
            });
        });
        await using WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) });
        Uri[] addresses = await CodeEndpoints.StartAsync(app);
        IMeterFactory meters = app.Services.GetRequiredService<IMeterFactory>();
        using var sendfile = new InstrumentRecorder(meters, "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        using var http2 = new InstrumentRecorder(meters, "fastfiles.send_path.fallbacks", new("fastfiles.send_path.reason", "http2"));

        Assert.Equal(_contents["c40k.bin"], (await RawHttp.SendAsync(addresses[0], "/c40k.bin")).Body);
        Assert.Equal(40_000, await Poll.UntilAsync(() => sendfile.Total, 40_000));
        Assert.Equal(_contents["c64k.bin"], (await RawHttp.SendAsync(addresses[0], "/c64k.bin")).Body);
        Assert.Equal(40_000 + (64 * 1024), await Poll.UntilAsync(() => sendfile.Total, 40_000 + (64 * 1024)));
        for (int i = 0; i < 3; i++)
        {
            Assert.Equal(_contents["c40k.bin"], (await RawHttp.SendAsync(addresses[0], "/c40k.bin")).Body);
        }

        using var client = new HttpClient();
        for (int i = 0; i < 3; i++)
        {
            using HttpResponseMessage response = await client.SendAsync(new HttpRequestMessage(HttpMethod.Get, new Uri(addresses[1], "/c64k.bin"))
            {
                Version = HttpVersion.Version20,
                VersionPolicy = HttpVersionPolicy.RequestVersionExact,
            });
            Assert.Equal(_contents["c64k.bin"], await response.Content.ReadAsByteArrayAsync());
        }

        Assert.Equal(40_000 + (64 * 1024), sendfile.Total);
        Assert.Equal(0, http2.Total);
        await app.StopAsync();
    }

    private async Task<(WebApplication App, Uri Address)> StartWithThresholdAsync(long threshold)
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l => l.UseZeroCopySendFile(o => o.CachedMinimumLength = threshold)));
        WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root) });
        return (app, (await CodeEndpoints.StartAsync(app))[0]);
    }
}
