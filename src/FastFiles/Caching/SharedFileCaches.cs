using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace FastFiles.Caching;

/// <summary>
/// The file caches of one application that <c>UseFastFiles</c> and the static lane share when they serve the same root
/// with the same options object: each hot file is held once (bytes, kept descriptor, content hash, compressed
/// variants), watched once and counted once against the cache's limits. Carried by the application's container (the
/// host registers <c>IOptions&lt;&gt;</c> for every type), so two hosts in one process never share a cache.
/// </summary>
internal sealed class SharedFileCaches
{
    private readonly Dictionary<Key, Shared> _caches = [];

    /// <summary>
    /// What makes two users' entries interchangeable: the same root (its normalized path and symlink policy), the same
    /// URL prefix (entries are keyed by request path), the same options objects, from which both derive the entries'
    /// headers, sidecars, compression and validators, and the same answer on dotfiles: a user finds entries by path
    /// before its own checks, so it must never find one that those checks would have refused (the lane serves no
    /// dotfiles; a middleware with <c>ServeDotFiles</c> keeps a cache of its own). Options objects compare by reference:
    /// neither type overrides <see cref="object.Equals(object)"/>, and equal values in two objects could still change
    /// apart.
    /// </summary>
    internal readonly record struct Key(
        string Root, bool FollowSymlinksOutsideRoot, string RequestPath, bool Precompressed, bool ContentHashETags, bool ServeDotFiles,
        object Files, object FastFiles);

    private sealed class Shared(FileCache cache)
    {
        public FileCache Cache { get; } = cache;

        public int Users;
    }

    /// <summary>
    /// The cache for <paramref name="key"/> in <paramref name="services"/>' application, made with
    /// <paramref name="create"/> by its first user; without a container that carries options, a cache of the caller's
    /// own. The cache is disposed when the last lease is.
    /// </summary>
    public static FileCacheLease Acquire(IServiceProvider? services, Key key, Func<FileCache> create)
    {
        SharedFileCaches? shared = services?.GetService<IOptions<SharedFileCaches>>()?.Value;
        return shared is null ? FileCacheLease.Own(create()) : shared.Acquire(key, create);
    }

    private FileCacheLease Acquire(Key key, Func<FileCache> create)
    {
        lock (_caches)
        {
            if (!_caches.TryGetValue(key, out Shared? entry))
            {
                entry = new Shared(create());
                _caches.Add(key, entry);
            }

            entry.Users++;
            return new FileCacheLease(entry.Cache, this, key);
        }
    }

    internal void Release(Key key, FileCache cache)
    {
        lock (_caches)
        {
            if (!_caches.TryGetValue(key, out Shared? entry) || entry.Cache != cache || --entry.Users > 0)
            {
                return;
            }

            _caches.Remove(key);
        }

        cache.Dispose();
    }

    /// <summary>Caches held now (tests).</summary>
    internal FileCache[] Held()
    {
        lock (_caches)
        {
            return [.. _caches.Values.Select(s => s.Cache)];
        }
    }
}

/// <summary>One user's hold on a <see cref="FileCache"/>; disposing it more than once releases it once.</summary>
internal sealed class FileCacheLease : IDisposable
{
    private readonly SharedFileCaches? _owner;
    private readonly SharedFileCaches.Key _key;
    private int _released;

    internal FileCacheLease(FileCache cache, SharedFileCaches? owner, SharedFileCaches.Key key)
    {
        Cache = cache;
        _owner = owner;
        _key = key;
    }

    public FileCache Cache { get; }

    /// <summary>A cache nobody shares: the lease disposes it.</summary>
    public static FileCacheLease Own(FileCache cache) => new(cache, owner: null, default);

    public void Dispose()
    {
        if (Interlocked.Exchange(ref _released, 1) != 0)
        {
            return;
        }

        if (_owner is null)
        {
            Cache.Dispose();
        }
        else
        {
            _owner.Release(_key, Cache);
        }
    }
}
