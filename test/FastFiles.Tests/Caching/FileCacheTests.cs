using System.Reflection;
using FastFiles.Caching;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging.Abstractions;

namespace FastFiles.Tests.Caching;

/// <summary>
/// FileCache on files in a temporary folder: what a burst of misses reads to hash one version (README: "The hash is
/// computed once per file version by the file cache"), and a stale sidecar rewritten fresh, which revalidation must see
/// when notifications are lost (README: changes are seen within FileCacheRevalidationInterval).
/// </summary>
// One at a time with the other suite that hashes files: both use the process's table of known hashes, which a test
// here fills past its bound (forgetting what is done).
[Collection("Known content hashes")]
public sealed class FileCacheTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("ff-cache-").FullName;

    public void Dispose() => Directory.Delete(_root, recursive: true);

    private static long ReadChars()
        => long.Parse(File.ReadAllLines("/proc/self/io").First(l => l.StartsWith("rchar:", StringComparison.Ordinal))[6..].Trim());

    [Fact]
    public async Task Herd_of_misses_for_one_large_file_hashes_it_about_once()
    {
        const int Size = 8 * 1024 * 1024;
        const int Herd = 16;
        var bytes = new byte[Size];
        new Random(1).NextBytes(bytes);
        File.WriteAllBytes(Path.Combine(_root, "big.bin"), bytes);

        // Settled: a version changed within the last second is hashed once more when it has settled.
        await Task.Delay(FileStamp.SettleTime);
        var options = new FastFilesOptions { MaxCachedFileSize = 64 * 1024 };
        using var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, options, new FastFilesMetrics(null), NullLogger.Instance, contentHashETags: true);

        long before = ReadChars();
        CachedFile? last = null;
        var built = new List<CachedFile>();
        for (int i = 0; i < Herd; i++)
        {
            // As concurrent requests that all missed: each builds the entry (the middleware does not coalesce misses).
            last = cache.Build("/big.bin", "/big.bin", new FileResponseSettings(), precompressed: false);
            built.Add(last!);
        }

        // Every hash started has finished (queued behind one gate, in order).
        foreach (CachedFile entry in built)
        {
            await entry.Identity.ContentHash!.WhenReady();
        }

        Assert.NotNull(last!.Identity.ETag);
        long read = ReadChars() - before;

        // One version: about one read of the file, not one per request (16 x 8 MiB).
        Assert.True(read < 3L * Size, $"read {read / (1024 * 1024)} MiB to hash one {Size / (1024 * 1024)} MiB version");
    }

    // A host disposed without a stop leaves requests running: a build they finish on the disposed cache kept a descriptor
    // that nothing would close, against the process's budget of kept descriptors.
    [Fact]
    public void A_build_after_dispose_keeps_no_descriptor()
    {
        File.WriteAllBytes(Path.Combine(_root, "big.bin"), new byte[1024 * 1024]);
        var cache = new FileCache(new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, new FastFilesOptions(), new FastFilesMetrics(null), NullLogger.Instance);
        cache.Dispose();

        CachedFile? entry = cache.Build("/big.bin", "/big.bin", new FileResponseSettings(), precompressed: false);

        Assert.NotNull(entry);
        Assert.Equal(0, cache.OpenHandles);
        Assert.False(cache.TryGet("/big.bin", out _));
    }

    // A root at "/": the watcher's paths were cut one character short of the keys ("tmp/x" for "/tmp/x"), so a changed
    // file stayed cached until revalidation. (A cache over "/" itself would watch the whole file system: the mapping is
    // tested on its own.)
    [Theory]
    [InlineData("/", "/srv/www/a.txt", "/srv/www/a.txt")]
    [InlineData("/srv/www", "/srv/www/css/a.css", "/css/a.css")]
    [InlineData("/srv/www", "/srv/www", "")]
    [InlineData("/srv/www", "/etc/passwd", null)]
    public void Watcher_paths_map_to_keys_under_any_root(string root, string fullPath, string? expected)
        => Assert.Equal(expected, FileCache.RelativeOf(fullPath, new PhysicalFileSource(root, followLinksOutsideRoot: false).MapRoot));

    // Out of inotify watches, each new directory's watch fails: that error emptied the whole cache every time (a mkdir
    // under the root cleared 100 entries). Only lost events (queue overflow) do; a directory without a watch is covered
    // by revalidation.
    [Fact]
    public void A_failed_watch_keeps_the_entries_and_lost_events_clear_them()
    {
        for (int i = 0; i < 5; i++)
        {
            File.WriteAllText(Path.Combine(_root, $"f{i}.txt"), "x");
        }

        using var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, new FastFilesOptions(), new FastFilesMetrics(null), NullLogger.Instance);
        for (int i = 0; i < 5; i++)
        {
            Assert.NotNull(cache.Build($"/f{i}.txt", $"/f{i}.txt", new FileResponseSettings(), precompressed: false));
        }

        Assert.Equal(5, cache.Count);
        // As the runtime raises it: an IOException whose HResult is ENOSPC (28).
        cache.OnWatcherError(new IOException("The configured user limit (30) on the number of inotify watches has been reached.", 28));
        cache.OnWatcherError(new IOException("The configured user limit (30) on the number of inotify watches has been reached.", 28));
        Assert.Equal(5, cache.Count);
        cache.OnWatcherError(new InternalBufferOverflowException());
        Assert.Equal(0, cache.Count);

        // Any other error may have stopped the watcher: cleared as before.
        Assert.NotNull(cache.Build("/f0.txt", "/f0.txt", new FileResponseSettings(), precompressed: false));
        cache.OnWatcherError(new IOException("failed", 5));
        Assert.Equal(0, cache.Count);
    }

    // A deploy renames thousands of temporary files into place: each rename's old name is no cached key and might have
    // been a directory. The entries are looked through only when a cached key is under that name.
    [Fact]
    public void A_change_to_a_path_with_no_cached_key_under_it_scans_no_entry_and_a_directory_change_still_invalidates()
    {
        Directory.CreateDirectory(Path.Combine(_root, "sub", "deeper"));
        File.WriteAllText(Path.Combine(_root, "top.txt"), "x");
        File.WriteAllText(Path.Combine(_root, "sub", "a.txt"), "x");
        File.WriteAllText(Path.Combine(_root, "sub", "deeper", "b.txt"), "x");
        using var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, new FastFilesOptions(), new FastFilesMetrics(null), NullLogger.Instance);
        var watcher = (FileSystemWatcher)typeof(FileCache).GetField("_watcher", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(cache)!;
        watcher.EnableRaisingEvents = false;
        foreach (string key in new[] { "/top.txt", "/sub/a.txt", "/sub/deeper/b.txt" })
        {
            Assert.NotNull(cache.Build(key, key, new FileResponseSettings(), precompressed: false));
        }

        for (int i = 0; i < 100; i++)
        {
            cache.OnChanged(Path.Combine(_root, $".f{i}.txt.tmp"), directoryMayHaveChanged: true);
            cache.OnChanged(Path.Combine(_root, "sub", $".f{i}.txt.tmp"), directoryMayHaveChanged: true);
        }

        cache.OnChanged(Path.Combine(_root, "su"), directoryMayHaveChanged: true);
        Assert.Equal(0, cache.DirectoryScans);
        Assert.Equal(3, cache.Count);

        // A directory renamed away: everything under it goes, and nothing else.
        cache.OnChanged(Path.Combine(_root, "sub"), directoryMayHaveChanged: true);
        Assert.Equal(1, cache.DirectoryScans);
        Assert.Equal(1, cache.Count);
        Assert.True(cache.TryGet("/top.txt", out _, counted: false));

        // Nothing is cached under it any more: no scan.
        cache.OnChanged(Path.Combine(_root, "sub"), directoryMayHaveChanged: true);
        Assert.Equal(1, cache.DirectoryScans);

        // Cached again, seen again.
        Assert.NotNull(cache.Build("/sub/deeper/b.txt", "/sub/deeper/b.txt", new FileResponseSettings(), precompressed: false));
        cache.OnChanged(Path.Combine(_root, "sub"), directoryMayHaveChanged: true);
        Assert.Equal(2, cache.DirectoryScans);
        Assert.Equal(1, cache.Count);
    }

    // Large files asked for once each through a small cache: only the versions still cached when their hash's turn comes
    // are read. The gate is held while they are built, as a long hash ahead of them would.
    [Fact]
    public async Task Hashes_of_versions_evicted_before_their_turn_are_not_read()
    {
        const int Size = 2 * 1024 * 1024;
        const int Files = 40;
        var bytes = new byte[Size];
        for (int i = 0; i < Files; i++)
        {
            new Random(i).NextBytes(bytes);
            File.WriteAllBytes(Path.Combine(_root, $"f{i}.bin"), bytes);
        }

        // Settled: an entry built from a file changed within the last second is read again at its next revalidation.
        await Task.Delay(FileStamp.SettleTime);
        var options = new FastFilesOptions { MaxCachedFileSize = 64 * 1024, MaxCachedFiles = 4 };
        using var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, options, new FastFilesMetrics(null), NullLogger.Instance, contentHashETags: true);
        var gate = (SemaphoreSlim)typeof(FileCache).GetField("_hashGate", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(cache)!;

        var built = new List<CachedFile>();
        long before = ReadChars();
        await gate.WaitAsync();
        try
        {
            for (int i = 0; i < Files; i++)
            {
                built.Add(cache.Build($"/f{i}.bin", $"/f{i}.bin", new FileResponseSettings(), precompressed: false)!);
            }
        }
        finally
        {
            gate.Release();
        }

        foreach (CachedFile entry in built)
        {
            await entry.Identity.ContentHash!.WhenReady().WaitAsync(TimeSpan.FromSeconds(60));
        }

        long read = ReadChars() - before;
        CachedFile[] kept = built.Where(e => cache.TryGet(e.Key, out CachedFile? still) && ReferenceEquals(still, e)).ToArray();
        Assert.InRange(kept.Length, 1, options.MaxCachedFiles);
        Assert.All(kept, e => Assert.NotNull(e.Identity.ETag));
        Assert.All(built.Except(kept), e => Assert.Null(e.Identity.ETag));

        // The kept versions' bytes, not all forty files' (80 MiB).
        Assert.True(read <= (kept.Length + 1L) * Size, $"read {read / (1024 * 1024)} MiB to hash {kept.Length} kept versions of 2 MiB");
    }

    // A version evicted and built again gets its finished hash back from the process's table each time: the hash must not
    // gather a holder per rebuild (each kept its cache alive, and each miss copied the growing list).
    [Fact]
    public async Task A_finished_hash_given_to_rebuilds_of_its_version_gathers_no_holders()
    {
        for (int i = 0; i < 3; i++)
        {
            File.WriteAllBytes(Path.Combine(_root, $"f{i}.bin"), new byte[256 * 1024]);
        }

        await Task.Delay(FileStamp.SettleTime);
        var options = new FastFilesOptions { MaxCachedFileSize = 64 * 1024, MaxCachedFiles = 2 };
        using var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, options, new FastFilesMetrics(null), NullLogger.Instance, contentHashETags: true);
        ContentHash hash = cache.Build("/f0.bin", "/f0.bin", new FileResponseSettings(), precompressed: false)!.Identity.ContentHash!;
        await hash.WhenReady();
        Assert.NotNull(hash.ETag);

        FieldInfo holders = typeof(ContentHash).GetField("_holders", BindingFlags.NonPublic | BindingFlags.Instance)!;
        for (int round = 0; round < 200; round++)
        {
            for (int i = 0; i < 3; i++)
            {
                CachedFile built = cache.Build($"/f{i}.bin", $"/f{i}.bin", new FileResponseSettings(), precompressed: false)!;
                if (i == 0)
                {
                    Assert.Same(hash, built.Identity.ContentHash);
                }
            }
        }

        Assert.Empty((Array)holders.GetValue(hash)!);
    }

    // Linux stamps a write before its data lands, so bytes read between two identical stamps of a file being rewritten in
    // place can mix two versions. An entry built within a second of its file's change compares its bytes with the file's
    // once it has settled, though its stamp says nothing changed: kept when they are the file's, read again when not.
    [Fact]
    public async Task An_entry_built_from_a_file_changed_moments_before_is_checked_once_settled()
    {
        string path = Path.Combine(_root, "young.txt");
        File.WriteAllBytes(path, new byte[1000]);
        File.WriteAllBytes(Path.Combine(_root, "torn.txt"), new byte[1000]);
        var options = new FastFilesOptions { FileCacheRevalidationInterval = TimeSpan.Zero };
        using var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, options, new FastFilesMetrics(null), NullLogger.Instance);

        CachedFile young = cache.Build("/young.txt", "/young.txt", new FileResponseSettings(), precompressed: false)!;
        CachedFile torn = cache.Build("/torn.txt", "/torn.txt", new FileResponseSettings(), precompressed: false)!;
        Assert.True(young.BuiltYoung);
        Assert.True(torn.BuiltYoung);

        // As a read that met a write under way: bytes that are not the file's, under the file's own stamp.
        torn.Identity.Content![500] = 1;
        await Task.Delay(FileStamp.SettleTime + TimeSpan.FromMilliseconds(100));

        Assert.True(cache.TryGet("/young.txt", out CachedFile? kept));
        Assert.Same(young, kept);
        Assert.False(young.BuiltYoung);
        Assert.False(cache.TryGet("/torn.txt", out _));
        CachedFile again = cache.Build("/torn.txt", "/torn.txt", new FileResponseSettings(), precompressed: false)!;
        Assert.False(again.BuiltYoung);
        Assert.Equal(new byte[1000], again.Identity.Content);
    }

    // A request with no entry of its own (another host's root over the same files, its cache off or its entry stale)
    // joins a cache's running hash, and that cache stops (its host does) first: the version did not change, so the
    // request still gets the tag (an If-Match was answered 412, an If-None-Match 200 without a tag).
    [Fact]
    public async Task A_request_waiting_for_another_caches_hash_gets_the_tag_when_that_cache_stops()
    {
        // Sparse: long enough to hash (a few hundred ms) that the cache stops while it runs.
        const long Length = 256L * 1024 * 1024;
        using (FileStream file = File.Create(Path.Combine(_root, "big.bin")))
        {
            file.SetLength(Length);
        }

        var options = new FastFilesOptions { MaxCachedFileSize = 64 * 1024 };
        var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, options, new FastFilesMetrics(null), NullLogger.Instance, contentHashETags: true);
        ContentHash joined;
        Task<bool> waiting;
        try
        {
            FileVersion version = cache.Build("/big.bin", "/big.bin", new FileResponseSettings(), precompressed: false)!.Identity;
            joined = ContentHash.ForRequests(version.PhysicalPath!, version.Stamp);
            Assert.Same(version.ContentHash, joined);
            waiting = joined.WhenNeededByAsync(CancellationToken.None);
        }
        finally
        {
            cache.Dispose();
        }

        Assert.True(await waiting.WaitAsync(TimeSpan.FromSeconds(60)));
        Assert.Equal(Files.ContentHashTests.ZerosTag(Length), joined.ETag);
    }

    [Fact]
    public async Task A_cache_that_takes_over_a_hash_requests_started_keeps_it_running_when_they_leave()
    {
        string path = Path.Combine(_root, "huge.iso");
        using (FileStream big = File.Create(path))
        {
            // Sparse: minutes to hash.
            big.SetLength(16L * 1024 * 1024 * 1024);
        }

        // Settled (FileStamp.ChangedRecently), so the entry built below is not read again while the test runs.
        await Task.Delay(FileStamp.SettleTime);
        FileStamp stamp = FastFiles.Tests.Files.ContentHashTests.StampOf(path);

        // A request with no cache entry (UseFastFiles with the cache off, FastResults) waits for the tag, then a cache
        // builds the same version: it takes that hash.
        ContentHash hash = ContentHash.ForRequests(path, stamp);
        using var leaves = new CancellationTokenSource();
        Task<bool> waiting = hash.WhenNeededByAsync(leaves.Token);
        var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, new FastFilesOptions { MaxCachedFileSize = 64 * 1024 },
            new FastFilesMetrics(null), NullLogger.Instance, contentHashETags: true);
        try
        {
            CachedFile entry = cache.Build("/huge.iso", "/huge.iso", new FileResponseSettings(), precompressed: false)!;
            Assert.Same(hash, entry.Identity.ContentHash);

            // The request leaves: the entry still needs the tag, so the hash goes on and the entry stays.
            leaves.Cancel();
            Assert.False(await waiting);
            Task done = hash.WhenReady();
            Assert.NotSame(done, await Task.WhenAny(done, Task.Delay(500)));
            Assert.True(cache.TryGet("/huge.iso", out CachedFile? still));
            Assert.Same(entry, still);
        }
        finally
        {
            cache.Dispose();
        }

        // Its cache stopped: so does the hash.
        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        await hash.WhenReady().WaitAsync(bound.Token);
        Assert.Null(hash.ETag);
    }

    [Fact]
    public async Task A_version_hashed_before_its_entry_was_evicted_is_not_read_again()
    {
        byte[] bytes = new byte[200_000];
        new Random(3).NextBytes(bytes);
        File.WriteAllBytes(Path.Combine(_root, "big.bin"), bytes);
        File.WriteAllBytes(Path.Combine(_root, "a.txt"), new byte[100]);
        var options = new FastFilesOptions { MaxCachedFileSize = 64 * 1024, MaxCachedFiles = 1 };
        var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, options, new FastFilesMetrics(null), NullLogger.Instance, contentHashETags: true);
        try
        {
            CachedFile first = cache.Build("/big.bin", "/big.bin", new FileResponseSettings(), precompressed: false)!;
            ContentHash hash = first.Identity.ContentHash!;
            await hash.WhenReady();
            Assert.Equal(ContentHash.Of(bytes).ETag, hash.ETag);

            // Evicted by another file, then asked for again: the same version, so the tag it already has, at once.
            cache.Build("/a.txt", "/a.txt", new FileResponseSettings(), precompressed: false);
            Assert.False(cache.TryGet("/big.bin", out _));
            CachedFile again = cache.Build("/big.bin", "/big.bin", new FileResponseSettings(), precompressed: false)!;
            Assert.Same(hash, again.Identity.ContentHash);
            Assert.Equal(hash.ETag, again.Identity.ETag);
        }
        finally
        {
            cache.Dispose();
        }
    }

    [Fact]
    public async Task A_version_built_again_while_its_hash_runs_shares_that_hash()
    {
        // Sparse: minutes to hash, so it still runs when the version is built again.
        using (FileStream big = File.Create(Path.Combine(_root, "huge.iso")))
        {
            big.SetLength(16L * 1024 * 1024 * 1024);
        }

        File.WriteAllBytes(Path.Combine(_root, "a.txt"), new byte[100]);

        // Settled: a version changed within the last second is hashed again once it has settled, and its entry read again.
        await Task.Delay(FileStamp.SettleTime);
        var options = new FastFilesOptions { MaxCachedFileSize = 64 * 1024, MaxCachedFiles = 1 };
        var cache = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, options, new FastFilesMetrics(null), NullLogger.Instance, contentHashETags: true);
        var hashes = new List<ContentHash>();
        try
        {
            CachedFile first = cache.Build("/huge.iso", "/huge.iso", new FileResponseSettings(), precompressed: false)!;
            hashes.Add(first.Identity.ContentHash!);

            // Another file takes the one place (eviction goes down to 90% of one entry: none), so the next request for
            // huge.iso misses and builds it again, while its hash runs.
            cache.Build("/a.txt", "/a.txt", new FileResponseSettings(), precompressed: false);
            Assert.False(cache.TryGet("/huge.iso", out _));
            CachedFile again = cache.Build("/huge.iso", "/huge.iso", new FileResponseSettings(), precompressed: false)!;
            hashes.Add(again.Identity.ContentHash!);

            // And requests that all missed at once: each builds the entry, none before another stored it.
            using var start = new Barrier(4);
            CachedFile[] burst = await Task.WhenAll(Enumerable.Range(0, 4).Select(i => Task.Run(() =>
            {
                cache.Remove(again);
                start.SignalAndWait();
                return cache.Build("/huge.iso", "/huge.iso", new FileResponseSettings(), precompressed: false)!;
            })));
            hashes.AddRange(burst.Select(e => e.Identity.ContentHash!));

            // One version, one hash: one read of the file, and every waiter on the same one.
            Assert.All(hashes, h => Assert.Same(hashes[0], h));
        }
        finally
        {
            cache.Dispose();
            foreach (ContentHash hash in hashes)
            {
                await hash.WhenReady();
            }
        }
    }

    // The static lane and UseFastFiles over one root keep a cache each (FastResults another): a large file's version is
    // still hashed once, and a conditional request on either waits for that one read.
    [Fact]
    public async Task Caches_over_the_same_files_share_a_running_hash()
    {
        using (FileStream big = File.Create(Path.Combine(_root, "shared.iso")))
        {
            big.SetLength(16L * 1024 * 1024 * 1024);
        }

        var options = new FastFilesOptions { MaxCachedFileSize = 64 * 1024 };
        var lane = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), "/static", options, new FastFilesMetrics(null), NullLogger.Instance, contentHashETags: true);
        var app = new FileCache(
            new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, options, new FastFilesMetrics(null), NullLogger.Instance, contentHashETags: true);
        ContentHash? first = null, second = null;
        try
        {
            first = lane.Build("/static/shared.iso", "/shared.iso", new FileResponseSettings(), precompressed: false)!.Identity.ContentHash;
            second = app.Build("/shared.iso", "/shared.iso", new FileResponseSettings(), precompressed: false)!.Identity.ContentHash;
            Assert.NotNull(first);
            Assert.Same(first, second);

            // Stopped by the cache that started it, the hash ends without a tag, and the other cache drops its entry
            // (the next request builds it again with a hash of its own) rather than keep a version that never gets one.
            lane.Dispose();
            await first!.WhenReady();
            Assert.True(first.Failed);
            Assert.True(SpinWait.SpinUntil(() => !app.TryGet("/shared.iso", out _), TimeSpan.FromSeconds(30)));
            ContentHash? again = app.Build("/shared.iso", "/shared.iso", new FileResponseSettings(), precompressed: false)!.Identity.ContentHash;
            Assert.NotNull(again);
            Assert.NotSame(first, again);
            second = again;
        }
        finally
        {
            lane.Dispose();
            app.Dispose();
            await (first?.WhenReady() ?? Task.CompletedTask);
            await (second?.WhenReady() ?? Task.CompletedTask);
        }
    }

    [Fact]
    public void Stale_sidecar_rewritten_fresh_is_seen_by_revalidation_without_notifications()
    {
        string original = Path.Combine(_root, "app.js");
        string sidecar = original + ".br";
        File.WriteAllBytes(original, new byte[4000]);
        File.WriteAllBytes(sidecar, new byte[100]);
        File.SetLastWriteTimeUtc(sidecar, File.GetLastWriteTimeUtc(original).AddSeconds(-10));

        var options = new FastFilesOptions { FileCacheRevalidationInterval = TimeSpan.Zero };
        using var cache = new FileCache(new PhysicalFileSource(_root, followLinksOutsideRoot: false), string.Empty, options, new FastFilesMetrics(null), NullLogger.Instance);

        // Notifications lost: only revalidation is left.
        var watcher = (FileSystemWatcher)typeof(FileCache).GetField("_watcher", BindingFlags.NonPublic | BindingFlags.Instance)!.GetValue(cache)!;
        watcher.EnableRaisingEvents = false;

        CachedFile built = cache.Build("/app.js", "/app.js", new FileResponseSettings(), precompressed: true)!;
        Assert.Equal(ContentCodings.None, built.Available);

        // The build tool writes the sidecar again, now fresh.
        File.WriteAllBytes(sidecar, new byte[90]);
        File.SetLastWriteTimeUtc(sidecar, File.GetLastWriteTimeUtc(original).AddSeconds(10));

        bool hit = cache.TryGet("/app.js", out CachedFile entry);
        Assert.False(hit && entry.Available == ContentCodings.None, "revalidation kept the entry without the fresh sidecar");
    }
}
