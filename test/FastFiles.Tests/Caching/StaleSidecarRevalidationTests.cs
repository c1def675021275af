using System.Reflection;
using FastFiles.Caching;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging.Abstractions;

namespace FastFiles.Tests.Caching;

/// <summary>README: changes are seen within FileCacheRevalidationInterval "even if notifications are lost". A stale
/// sidecar (older than its original, so ignored) that is then rewritten fresh is a change revalidation must see.</summary>
public sealed class StaleSidecarRevalidationTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("ff-sidecar-").FullName;

    public void Dispose() => Directory.Delete(_root, recursive: true);

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
