using FastFiles.Caching;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace FastFiles.Tests.Caching;

/// <summary>
/// The application's shared file caches: users with the same root and options objects get one cache, any difference
/// gets another, and a cache is disposed (its bytes and kept descriptors released) when its last user lets go, once.
/// </summary>
public sealed class SharedFileCachesTests : IDisposable
{
    private readonly string _root = Directory.CreateTempSubdirectory("ff-shared-").FullName;
    private readonly ServiceProvider _services = new ServiceCollection().AddOptions().BuildServiceProvider();
    private readonly FastStaticFileOptions _files = new();
    private readonly FastFilesOptions _fast = new();
    private int _made;

    public SharedFileCachesTests() => File.WriteAllBytes(Path.Combine(_root, "a.txt"), new byte[3000]);

    public void Dispose()
    {
        _services.Dispose();
        Directory.Delete(_root, recursive: true);
    }

    private SharedFileCaches Registry => _services.GetRequiredService<IOptions<SharedFileCaches>>().Value;

    private SharedFileCaches.Key KeyFor(string root, bool dotFiles = false, FastStaticFileOptions? files = null)
        => new(root, FollowSymlinksOutsideRoot: false, "/static", Precompressed: false, ContentHashETags: false, dotFiles, files ?? _files, _fast);

    private FileCacheLease Acquire(SharedFileCaches.Key key, IServiceProvider? services = null)
        => SharedFileCaches.Acquire(services ?? _services, key, () =>
        {
            Interlocked.Increment(ref _made);
            return new FileCache(new PhysicalFileSource(key.Root, false), "/static", _fast, new FastFilesMetrics(null), NullLogger.Instance);
        });

    private static CachedFile Build(FileCache cache)
        => cache.Build("/static/a.txt", "/a.txt", new FileResponseSettings { ContentType = "text/plain" }, precompressed: false)!;

    [Fact]
    public void Same_root_and_options_share_one_cache_until_the_last_user_leaves()
    {
        // The same folder as UseFastFiles names it (a PhysicalFileProvider's root ends with a separator; the middleware
        // keys by its PhysicalFileSource's root) and as a lane root may spell it: both normalize to one key.
        string fromProvider = new PhysicalFileSource(new Microsoft.Extensions.FileProviders.PhysicalFileProvider(_root).Root, false).Root;
        string fromLane = Path.TrimEndingDirectorySeparator(Path.GetFullPath(Path.Combine(_root, ".") + Path.DirectorySeparatorChar));
        FileCacheLease first = Acquire(KeyFor(fromProvider));
        FileCacheLease second = Acquire(KeyFor(fromLane));
        Assert.Same(first.Cache, second.Cache);
        Assert.Equal(1, _made);
        Assert.Single(Registry.Held());

        Assert.NotNull(Build(first.Cache));
        Assert.True(second.Cache.TryGet("/static/a.txt", out _));
        Assert.Equal(3000, second.Cache.BytesHeld);

        first.Dispose();
        first.Dispose();   // a second Dispose of one lease must not release the other user's hold
        Assert.Single(Registry.Held());
        Assert.Equal(3000, second.Cache.BytesHeld);
        Assert.True(second.Cache.TryGet("/static/a.txt", out _));

        second.Dispose();
        Assert.Empty(Registry.Held());
        Assert.Equal(0, second.Cache.BytesHeld);
        Assert.Equal(0, second.Cache.Count);

        // A user after that gets a new cache.
        using FileCacheLease third = Acquire(KeyFor(_root));
        Assert.NotSame(second.Cache, third.Cache);
        Assert.Equal(2, _made);
    }

    [Fact]
    public void Any_difference_in_root_options_object_or_dotfiles_gets_a_cache_of_its_own()
    {
        string other = Directory.CreateTempSubdirectory("ff-shared-other-").FullName;
        try
        {
            using FileCacheLease baseline = Acquire(KeyFor(_root));
            using FileCacheLease otherRoot = Acquire(KeyFor(other));
            using FileCacheLease dotFiles = Acquire(KeyFor(_root, dotFiles: true));
            // Equal values in another object are not the same options: either could change apart from the other.
            using FileCacheLease otherOptions = Acquire(KeyFor(_root, files: new FastStaticFileOptions()));
            FileCache[] caches = [baseline.Cache, otherRoot.Cache, dotFiles.Cache, otherOptions.Cache];
            Assert.Equal(4, caches.Distinct().Count());
            Assert.Equal(4, Registry.Held().Length);
        }
        finally
        {
            Directory.Delete(other, recursive: true);
        }
    }

    [Fact]
    public void Without_a_container_that_carries_options_each_user_has_its_own_cache()
    {
        using var bare = new ServiceCollection().BuildServiceProvider();
        FileCacheLease first = Acquire(KeyFor(_root), bare);
        using FileCacheLease second = Acquire(KeyFor(_root), bare);
        Assert.NotSame(first.Cache, second.Cache);
        Assert.NotNull(Build(first.Cache));
        first.Dispose();
        Assert.Equal(0, first.Cache.BytesHeld);
        Assert.NotNull(Build(second.Cache));
        Assert.Equal(3000, second.Cache.BytesHeld);
    }
}
