using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using FastFiles.Diagnostics;
using FastFiles.Http;
using FastFiles.Files;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Logging;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Caching;

/// <summary>
/// Metadata, header strings and small files' bytes for one <c>UseFastFiles</c> root, keyed by request path.
/// </summary>
/// <remarks>
/// Freshness: a file-system watcher (inotify on Linux) drops entries as files change, typically within
/// milliseconds; independently, an entry older than <see cref="FastFilesOptions.FileCacheRevalidationInterval"/>
/// is re-checked with one stat before use. Entries are compared by inode, size, and nanosecond modification and
/// change times, so replacement by rename, same-size rewrites within one second and restored mtimes are all seen.
/// Content is read once with the stamp taken before and after; if the file changed while it was read the bytes
/// are not cached. A cached version's bytes are immutable, so a response from them never mixes two versions; bodies
/// sent with sendfile(2) from a kept descriptor (the zero-copy send path) are read when they leave, checked against
/// the stamp before the send and before its last chunk, as uncached bodies are.
/// </remarks>
internal sealed partial class FileCache : IDisposable, ICacheGauges, IContentHashHolder
{
    private readonly ConcurrentDictionary<string, CachedFile> _entries = new(StringComparer.Ordinal);

    // The directories holding cached keys (each key up to its last '/'), with how many: a watcher event that may name a
    // directory looks through the entries only when one is under it. A deploy that renames 20,000 temporary files into
    // place otherwise scanned every entry for each of them (16,000 entries cached: 689 ticks of server CPU for the burst,
    // 241-268 with this check). Changed under _writeLock.
    private readonly Dictionary<string, int> _directories = new(StringComparer.Ordinal);
    private int _directoryScans;
    private readonly Lock _writeLock = new();
    private readonly PhysicalFileSource _source;
    private readonly string _keyPrefix;
    private readonly FastFilesOptions _options;
    private readonly FastFilesMetrics _metrics;
    private readonly ILogger _logger;
    private readonly long _revalidateAfterMs;
    private readonly FileSystemWatcher? _watcher;
    private readonly bool _contentHashETags;

    // Content hashes of files too large to hold are computed one at a time, off the request path, and abandoned
    // when the app stops.
    private readonly SemaphoreSlim _hashGate = new(1);

    // Hashes a waiting request asked for run outside _hashGate (not behind other files'), at most this many at once.
    private readonly SemaphoreSlim _neededGate = new(Math.Max(1, Environment.ProcessorCount));
    private readonly CancellationTokenSource _stopping = new();

    private long _bytesHeld;
    private long _generation;
    private int _openHandles;

    // Set under _writeLock by Dispose. A host disposed without a stop leaves requests running (Kestrel does not wait for
    // them then): a build they finish afterwards must neither keep a descriptor nor store an entry that nothing clears,
    // since kept descriptors count against the process's budget (KeptDescriptors).
    private bool _disposed;
    private int _watcherPartlyFailed;

    // Looks at entries holding descriptors that no request has revalidated lately (see SweepDescriptors).
    private readonly Timer _sweep;

    public FileCache(
        PhysicalFileSource source, string keyPrefix, FastFilesOptions options, FastFilesMetrics metrics, ILogger logger, bool contentHashETags = false,
        CompressionPolicy? compression = null)
    {
        _compression = compression;
        _contentHashETags = contentHashETags;
        _source = source;
        _keyPrefix = keyPrefix;
        _options = options;
        _metrics = metrics;
        _logger = logger;
        _revalidateAfterMs = Math.Max(0, (long)options.FileCacheRevalidationInterval.TotalMilliseconds);
        _watcher = StartWatcher();
        long sweepMs = SweepPeriodMs(_revalidateAfterMs);
        _sweep = new Timer(static state => ((FileCache)state!).SweepDescriptors(), this, sweepMs, sweepMs);
        if (compression is not null)
        {
            _compressionQueue = StartCompressor();
        }

        metrics.Register(this);
    }

    public int Count => _entries.Count;

    /// <summary>Whether dynamic compression makes variants of such a file, so its responses vary by Accept-Encoding.</summary>
    public bool Compresses(string? contentType, long length)
        => (_compression?.CodingsFor(contentType, length) ?? ContentCodings.None) != ContentCodings.None;

    /// <summary>
    /// Whether responses for the file at <paramref name="subpath"/> vary by Accept-Encoding as an entry built now with
    /// sidecars (<see cref="Build"/>, <c>precompressed</c>) would say: dynamic compression makes variants of it, or a
    /// sidecar that is not a directory stands beside it. For a response sent from disk past a stale entry.
    /// </summary>
    public bool VariesByEncoding(string subpath, string? contentType, long length)
        => Compresses(contentType, length) || Array.Exists(Sidecar.All, s => IsSidecar(_source.MapPath(subpath + s.Suffix), out _));

    private static bool IsSidecar(string physicalPath, out FileStamp stamp)
        => FileStamp.TryGet(physicalPath, out stamp) && !stamp.IsDirectory;

    public long BytesHeld => Interlocked.Read(ref _bytesHeld);

    /// <summary>Descriptors of large files held open across requests (at most <see cref="FastFilesOptions.MaxOpenFiles"/>).</summary>
    public int OpenHandles => Volatile.Read(ref _openHandles);

    /// <summary>Finds a fresh entry for <paramref name="key"/>, re-checking the file system when the entry is due.</summary>
    /// <remarks><paramref name="counted"/> false leaves a hit uncounted (a lookup that answers no request).</remarks>
    public bool TryGet(string key, out CachedFile entry, bool counted = true)
        => _entries.TryGetValue(key, out entry!) && Validate(entry, counted);

    /// <summary>As <see cref="TryGet(string, out CachedFile, bool)"/>, for a key that is not a string (no string is made).</summary>
    /// <remarks>
    /// <paramref name="counted"/> false leaves the hit uncounted: the static lane counts a lookup only for a request it
    /// answers (<see cref="CountLookup"/>), as a request it hands off is looked up again, and counted, by the middleware.
    /// </remarks>
    public bool TryGet(ReadOnlySpan<char> key, out CachedFile entry, bool counted = true)
        => _entries.GetAlternateLookup<ReadOnlySpan<char>>().TryGetValue(key, out entry!) && Validate(entry, counted);

    /// <summary>Counts one request answered from the cache (<paramref name="built"/> false) or looked up on disk.</summary>
    public void CountLookup(bool built)
    {
        if (built)
        {
            _metrics.Miss();
        }
        else
        {
            _metrics.Hit();
        }
    }

    private bool Validate(CachedFile entry, bool counted = true)
    {
        long now = Environment.TickCount64;
        if (now - entry.ValidatedAt >= _revalidateAfterMs)
        {
            // Bytes read while their file had just changed may hold part of a write that was still under way (its stamp
            // set before its data landed): compared with the file once it has settled, whatever the stamp says.
            if (!StillCurrent(entry) || (entry.BuiltYoung && entry.Settled() && !HoldsSettledBytes(entry)))
            {
                Invalidate(entry);
                return false;
            }

            entry.MarkValidated(now);
        }

        entry.Touch(now);
        if (counted)
        {
            _metrics.Hit();
        }

        return true;
    }

    /// <summary>
    /// Opens <paramref name="subpath"/> and caches it with <paramref name="settings"/>; null when it is not a file
    /// we can serve (missing, a directory, outside the root).
    /// </summary>
    public CachedFile? Build(string key, string subpath, FileResponseSettings settings, bool precompressed, bool counted = true)
    {
        if (counted)
        {
            _metrics.Miss();
        }

        long generation = Interlocked.Read(ref _generation);
        if (_source.TryOpen(subpath, null, out FileVersion? opened) != LookupResult.File)
        {
            return null;
        }

        bool torn = false;
        FileVersion identity;
        var variants = new FileVersion?[Sidecar.All.Length];
        var stamps = new FileStamp?[Sidecar.All.Length];
        using (opened)
        {
            identity = Snapshot(key, opened!, ref torn);
            try
            {
                for (int i = 0; precompressed && i < Sidecar.All.Length; i++)
                {
                    (_, string suffix, string token, _) = Sidecar.All[i];
                    string sidecarPath = subpath + suffix;
                    if (!IsSidecar(_source.MapPath(sidecarPath), out FileStamp stamp))
                    {
                        continue;
                    }

                    stamps[i] = stamp;
                    if (_source.TryOpen(sidecarPath, token, out FileVersion? variant) == LookupResult.File)
                    {
                        using (variant)
                        {
                            if (Sidecar.IsFresh(variant!, identity))
                            {
                                variants[i] = Snapshot(key, variant!, ref torn);
                                stamps[i] = variant!.Stamp;
                            }
                        }
                    }
                }
            }
            catch
            {
                // No entry will hold these versions: their kept descriptors (and slots) go now.
                RetireHandles(identity, variants);
                throw;
            }
        }

        // A compressible file varies by Accept-Encoding from its first response on, before its variants exist: a cache
        // must never keep the identity response as the only representation (RFC 9110 12.5.5).
        ContentCodings compressible = _compression?.CodingsFor(settings.ContentType, identity.Length) ?? ContentCodings.None;
        bool vary = compressible != ContentCodings.None || Array.Exists(stamps, s => s is not null);
        var entry = new CachedFile(
            key, identity.PhysicalPath!, identity, variants, stamps, settings with { VaryAcceptEncoding = vary, LogName = subpath }, precompressed,
            Environment.TickCount64, compressible);

        Insert(entry);

        // A change raced with the build (the watcher's counter moved since the open). Looked at after the insert: an event
        // counted later finds the entry and drops it itself. A file the change left as built keeps its entry, re-checked
        // by the next request; one it deleted or replaced loses it now, with its kept descriptor, rather than holding a
        // deleted file open until the path is asked for again. This response still answers from the entry: what it
        // leases is refused once retired, and the version is then looked for again, as after an eviction.
        if (torn || Interlocked.Read(ref _generation) != generation)
        {
            if (!torn && StillCurrent(entry))
            {
                entry.MarkSuspect();
            }
            else
            {
                Remove(entry);
                return entry;
            }
        }

        if (HashFailed(entry))
        {
            Remove(entry);
            return entry;
        }

        // Hashes of versions too large to hold, computed one at a time off the request path (a request that waits for a
        // tag starts its own at once).
        entry.Identity.ContentHash?.Start();
        foreach (FileVersion? variant in entry.Variants)
        {
            variant?.ContentHash?.Start();
        }

        return entry;
    }

    /// <summary>Drops <paramref name="entry"/> if it is still the one cached under its key.</summary>
    public void Remove(CachedFile entry)
    {
        lock (_writeLock)
        {
            if (_entries.TryRemove(new KeyValuePair<string, CachedFile>(entry.Key, entry)))
            {
                _bytesHeld -= entry.ContentBytes;
                TrackLocked(entry.Key, -1);
            }
        }

        // Also when the entry was already replaced: its descriptors must not outlive what the cache knows.
        RetireHandles(entry);
    }

    private FileVersion Snapshot(string key, FileVersion opened, ref bool torn)
    {
        if (opened.Length > _options.LargestCachedBody)
        {
            // Bodies read from disk per request: keep this descriptor so those requests skip open and close.
            SharedFileHandle? shared = opened.Length > 0 && ReserveHandle() ? new SharedFileHandle(opened.TakeHandle()!) : null;
            return opened.ForCache(null, shared, HashInBackground(key, opened));
        }

        byte[] content = GC.AllocateUninitializedArray<byte>((int)opened.Length);
        int total = 0;
        while (total < content.Length)
        {
            int read = RandomAccess.Read(opened.Handle!, content.AsSpan(total), total);
            if (read == 0)
            {
                break;
            }

            total += read;
        }

        // Only bytes read between two identical stamps are one version of the file.
        if (total != content.Length || FileStamp.FromHandle(opened.Handle!) != opened.Stamp)
        {
            torn = true;
            return opened.ForCache(null, null, HashInBackground(key, opened));
        }

        // Kept open too when an endpoint's send path sends bodies this long with sendfile(2) (see
        // ZeroCopySendFileOptions.CachedMinimumLength); TLS and HTTP/2 responses still copy the bytes.
        SharedFileHandle? kept = content.Length > 0 && content.Length >= _options.CachedDescriptorMinimumLength && ReserveHandle()
            ? new SharedFileHandle(opened.TakeHandle()!)
            : null;
        return opened.ForCache(content, kept, _contentHashETags ? ContentHash.Of(content) : null);
    }

    // Started now, so by the time a client revalidates the tag is usually known; a change found while hashing, or a
    // failure, drops the entry.
    private ContentHash? HashInBackground(string key, FileVersion opened)
    {
        if (!_contentHashETags)
        {
            return null;
        }

        // The version the cached entry already hashes (or has hashed): a burst of misses for one new file builds the
        // entry once per request, and each must not read the whole file again.
        if (_entries.TryGetValue(key, out CachedFile? cached) && SameVersionHash(cached, opened) is { } shared)
        {
            return shared;
        }

        ContentHash? hash = null;
        hash = ContentHash.ForFile(opened.PhysicalPath!, opened.Stamp, _hashGate, _neededGate, () => Forget(key, hash!), _stopping.Token);
        ContentHash known = ContentHash.Share(hash);
        known.HeldBy(this, key);
        if (!ReferenceEquals(known, hash))
        {
            // Another cache's, a request's, or this cache's own from before an eviction: its own callback drops only the
            // entry it was started for, so if it ends without a tag (the file changed, its cache stopped) this entry goes
            // too. One requests started runs on for this entry once they leave, until this cache stops.
            known.Adopt(_stopping.Token);
            _ = known.WhenReady().ContinueWith(
                _ =>
                {
                    if (known.Failed)
                    {
                        Forget(key, known);
                    }
                },
                CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
            return known;
        }

        // Started by Build once the entry holding it is stored, so its turn finds the entry (or finds it gone).
        return hash;
    }

    private static ContentHash? SameVersionHash(CachedFile entry, FileVersion opened)
    {
        foreach (FileVersion? version in entry.Variants.Prepend(entry.Identity))
        {
            if (version is { ContentHash: { Failed: false } hash, Content: null }
                && version.Stamp == opened.Stamp
                && string.Equals(version.PhysicalPath, opened.PhysicalPath, StringComparison.Ordinal))
            {
                return hash;
            }
        }

        return null;
    }

    // The hash found the file changed, or failed (EMFILE, EIO): the entry goes, so the next request builds it again
    // with a new hash. Only marking it for revalidation kept a version whose stamp still matched without a tag for
    // as long as it stayed cached.
    private void Forget(string key, ContentHash hash)
    {
        if (_entries.TryGetValue(key, out CachedFile? entry) && Holds(entry, hash))
        {
            Remove(entry);
        }
    }

    bool IContentHashHolder.Holds(string key, ContentHash hash) => _entries.TryGetValue(key, out CachedFile? entry) && Holds(entry, hash);

    // The identity's hash or a precompressed sidecar's.
    private static bool Holds(CachedFile entry, ContentHash hash) => AnyHash(entry, h => ReferenceEquals(h, hash));

    // A hash that failed before its entry was stored found nothing to drop: drop it now.
    private static bool HashFailed(CachedFile entry) => AnyHash(entry, static h => h.Failed);

    private static bool AnyHash(CachedFile entry, Func<ContentHash, bool> match)
        => entry.Identity.ContentHash is { } identity && match(identity)
            || Array.Exists(entry.Variants, v => v?.ContentHash is { } variant && match(variant));

    // The entry's bytes are its files' now that they have settled (then it is no longer young). A variant compressed from
    // a read of a large file cannot be compared: its entry is read again, and compressed again, instead.
    private static bool HoldsSettledBytes(CachedFile entry)
    {
        FileVersion identity = entry.Identity;
        try
        {
            if (!SameBytes(identity))
            {
                return false;
            }

            foreach (FileVersion? variant in entry.Variants)
            {
                bool made = variant is not null && string.Equals(variant.PhysicalPath, identity.PhysicalPath, StringComparison.Ordinal);
                if (variant is not null && (made ? identity.Content is null : !SameBytes(variant)))
                {
                    return false;
                }
            }
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            return false;
        }

        entry.MarkSettled();
        return true;
    }

    // The file's bytes as of the version's stamp (ReadVersion, as compression reads a large file) are the ones held.
    private static bool SameBytes(FileVersion version)
    {
        if (version.Content is not { } content)
        {
            return true;
        }

        using SafeFileHandle file = FileVersion.OpenHandle(version.PhysicalPath!);
        return ReadVersion(file, version.Stamp) is { } now && now.AsSpan().SequenceEqual(content);
    }

    private static bool StillCurrent(CachedFile entry)
    {
        if (!FileStamp.TryGet(entry.PhysicalPath, out FileStamp stamp) || stamp != entry.Identity.Stamp)
        {
            return false;
        }

        for (int i = 0; entry.ProbesSidecars && i < Sidecar.All.Length; i++)
        {
            bool exists = FileStamp.TryGet(entry.SidecarPaths[i], out FileStamp sidecar) && !sidecar.IsDirectory;
            FileStamp? expected = entry.SidecarStamps[i];
            if (exists != expected.HasValue || (exists && sidecar != expected!.Value))
            {
                return false;
            }
        }

        return true;
    }

    private void Insert(CachedFile entry)
    {
        lock (_writeLock)
        {
            if (_disposed)
            {
                RetireHandles(entry);
                return;
            }

            if (_entries.TryGetValue(entry.Key, out CachedFile? previous))
            {
                _bytesHeld -= previous.ContentBytes;
                RetireHandles(previous);
            }
            else
            {
                TrackLocked(entry.Key, 1);
            }

            _entries[entry.Key] = entry;
            _bytesHeld += entry.ContentBytes;
            if (_bytesHeld > _options.FileCacheSizeLimit || _entries.Count > _options.MaxCachedFiles)
            {
                EvictLocked();
            }
        }
    }

    // Least recently used first, down to 90% of both limits, so eviction runs rarely and in batches.
    private void EvictLocked()
    {
        long byteTarget = _options.FileCacheSizeLimit * 9 / 10;
        int countTarget = Math.Max(0, _options.MaxCachedFiles * 9 / 10);
        CachedFile[] snapshot = _entries.Values.ToArray();
        Array.Sort(snapshot, static (a, b) => a.LastAccess.CompareTo(b.LastAccess));
        int evicted = 0;
        foreach (CachedFile victim in snapshot)
        {
            if (_bytesHeld <= byteTarget && _entries.Count <= countTarget)
            {
                break;
            }

            if (_entries.TryRemove(new KeyValuePair<string, CachedFile>(victim.Key, victim)))
            {
                _bytesHeld -= victim.ContentBytes;
                TrackLocked(victim.Key, -1);
                RetireHandles(victim);
                evicted++;
            }
        }

        if (evicted > 0)
        {
            _metrics.Evicted(evicted);
            Log.Evicted(_logger, evicted, _entries.Count, _bytesHeld);
        }
    }

    // Takes a descriptor slot; at the limit (this cache's MaxOpenFiles, or the process's budget), first closes the least
    // recently used tenth of the descriptors this cache holds (their entries stay cached and open the file per request
    // again), so hot files keep theirs.
    private bool ReserveHandle()
    {
        int max = _options.MaxOpenFiles;
        if (max <= 0)
        {
            return false;
        }

        if (TryTakeHandle(max))
        {
            return true;
        }

        lock (_writeLock)
        {
            int target = Math.Min(max, Volatile.Read(ref _openHandles)) * 9 / 10;
            CachedFile[] holders = _entries.Values.Where(e => e.HoldsHandles).ToArray();
            Array.Sort(holders, static (a, b) => a.LastAccess.CompareTo(b.LastAccess));
            foreach (CachedFile holder in holders)
            {
                if (Volatile.Read(ref _openHandles) <= target)
                {
                    break;
                }

                RetireHandles(holder);
            }
        }

        return TryTakeHandle(max);
    }

    private bool TryTakeHandle(int max)
    {
        if (Volatile.Read(ref _disposed))
        {
            return false;
        }

        if (Interlocked.Increment(ref _openHandles) > max)
        {
            Interlocked.Decrement(ref _openHandles);
            return false;
        }

        if (!KeptDescriptors.TryTake())
        {
            Interlocked.Decrement(ref _openHandles);
            return false;
        }

        return true;
    }

    // Closes (once leases end) the descriptor a version holds and frees its slot; a second call does nothing.
    private void Retire(FileVersion? version)
    {
        if (version?.SharedHandle?.Retire() == true)
        {
            Interlocked.Decrement(ref _openHandles);
            KeptDescriptors.Give();
        }
    }

    private void RetireHandles(CachedFile entry) => RetireHandles(entry.Identity, entry.Variants);

    private void RetireHandles(FileVersion identity, FileVersion?[] variants)
    {
        Retire(identity);
        Array.ForEach(variants, Retire);
    }

    /// <summary>What a watcher error means for the entries (called by the watcher; internal for tests).</summary>
    internal void OnWatcherError(Exception error)
    {
        // ENOSPC (28): a directory's watch could not be added (out of inotify watches); the watcher goes on.
        if (error is not IOException { HResult: 28 })
        {
            // Lost events (queue overflow), or the watcher stopped: nothing cached can be trusted.
            Log.WatcherError(_logger, error);
            Clear();
        }
        else if (Interlocked.Exchange(ref _watcherPartlyFailed, 1) == 0)
        {
            // A directory that could not be watched (out of inotify watches, every new directory failed the same way and
            // emptied the whole cache): its entries are still stat'ed at least once per FileCacheRevalidationInterval,
            // the bound for any lost notification.
            Log.WatcherPartlyUnavailable(_logger, _source.Root, error);
        }
    }

    private FileSystemWatcher? StartWatcher()
    {
        try
        {
            var watcher = new FileSystemWatcher(_source.Root)
            {
                IncludeSubdirectories = true,
                NotifyFilter = NotifyFilters.FileName | NotifyFilters.DirectoryName | NotifyFilters.LastWrite
                    | NotifyFilters.Size | NotifyFilters.CreationTime | NotifyFilters.Attributes,
                InternalBufferSize = 64 * 1024,
            };
            watcher.Changed += (_, e) => OnChanged(e.FullPath, directoryMayHaveChanged: false);
            watcher.Created += (_, e) => OnChanged(e.FullPath, directoryMayHaveChanged: false);
            watcher.Deleted += (_, e) => OnChanged(e.FullPath, directoryMayHaveChanged: true);
            watcher.Renamed += (_, e) =>
            {
                OnChanged(e.OldFullPath, directoryMayHaveChanged: true);
                OnChanged(e.FullPath, directoryMayHaveChanged: true);
            };
            watcher.Error += (_, e) => OnWatcherError(e.GetException());
            watcher.EnableRaisingEvents = true;
            return watcher;
        }
        catch (Exception ex) when (ex is IOException or ArgumentException or PlatformNotSupportedException or UnauthorizedAccessException)
        {
            Log.WatcherUnavailable(_logger, _source.Root, ex);
            return null;
        }
    }

    /// <summary>
    /// The path a watcher reports, as the key's path under the root ("/a/b.txt"), or null outside it. Keys follow the root
    /// without its trailing separator (<see cref="PhysicalFileSource.MapRoot"/>): for a root at "/" the whole path is the
    /// key, where cutting the root's own "/" gave "a/b.txt" and the change was never seen.
    /// </summary>
    internal static string? RelativeOf(string fullPath, string mapRoot)
        => fullPath.StartsWith(mapRoot, StringComparison.Ordinal) ? fullPath[mapRoot.Length..].Replace(Path.DirectorySeparatorChar, '/') : null;

    private void TrackLocked(string key, int delta)
    {
        string directory = key[..(key.LastIndexOf('/') + 1)];
        ref int count = ref CollectionsMarshal.GetValueRefOrAddDefault(_directories, directory, out _);
        count += delta;
        if (count <= 0)
        {
            _directories.Remove(directory);
        }
    }

    // Whether a cached key starts with prefix (which ends with '/'): exactly when the directory of one does.
    private bool HoldsKeysUnder(string prefix)
    {
        lock (_writeLock)
        {
            foreach (string directory in _directories.Keys)
            {
                if (directory.StartsWith(prefix, StringComparison.Ordinal))
                {
                    return true;
                }
            }
        }

        return false;
    }

    /// <summary>Entry scans for a directory's change (tests: a file's own event scans nothing).</summary>
    internal int DirectoryScans => Volatile.Read(ref _directoryScans);

    internal void OnChanged(string fullPath, bool directoryMayHaveChanged)
    {
        Interlocked.Increment(ref _generation);
        if (RelativeOf(fullPath, _source.MapRoot) is not { } relative)
        {
            return;
        }

        bool found = InvalidateKey(_keyPrefix + relative) | InvalidateDirectoryKey(relative);
        if (Sidecar.OriginalOf(relative) is { } original)
        {
            found |= InvalidateKey(_keyPrefix + original) | InvalidateDirectoryKey(original);
        }

        if (directoryMayHaveChanged && !found)
        {
            // A directory was renamed or removed: everything under it goes.
            string prefix = _keyPrefix + relative + "/";
            if (!HoldsKeysUnder(prefix))
            {
                return;
            }

            Interlocked.Increment(ref _directoryScans);
            foreach (KeyValuePair<string, CachedFile> pair in _entries)
            {
                if (pair.Key.StartsWith(prefix, StringComparison.Ordinal))
                {
                    Invalidate(pair.Value);
                }
            }
        }
    }

    // A directory's default file is cached under the directory's key ("/site/" for "/site/index.html").
    private bool InvalidateDirectoryKey(string relative)
    {
        string directoryKey = _keyPrefix + relative[..(relative.LastIndexOf('/') + 1)];
        if (_entries.TryGetValue(directoryKey, out CachedFile? entry)
            && string.Equals(entry.Identity.PhysicalPath, _source.MapPath(relative), StringComparison.Ordinal))
        {
            Invalidate(entry);
            return true;
        }

        return false;
    }

    private bool InvalidateKey(string key)
    {
        if (_entries.TryGetValue(key, out CachedFile? entry))
        {
            Invalidate(entry);
            return true;
        }

        return false;
    }

    private void Invalidate(CachedFile entry)
    {
        Remove(entry);
        _metrics.Invalidated();
    }

    private void Clear()
    {
        Interlocked.Increment(ref _generation);
        lock (_writeLock)
        {
            foreach (CachedFile entry in _entries.Values)
            {
                RetireHandles(entry);
            }

            _entries.Clear();
            _directories.Clear();
            _bytesHeld = 0;
        }
    }

    // Ten revalidation intervals, at least a second: at most MaxOpenFiles statx(2) calls a period, for entries idle that long.
    // A timer's period is at most 2^32 - 2 ms (49.7 days): a revalidation interval of days would otherwise stop the host
    // (or fail every FastResults request whose cache is made then).
    internal static long SweepPeriodMs(long revalidateAfterMs) => Math.Min(Math.Max(revalidateAfterMs, 100) * 10, uint.MaxValue - 1L);

    /// <summary>
    /// Closes the descriptors of files that changed where the watcher does not see: a subdirectory reached through a
    /// symbolic link (its events name the link's target, not the path the entry is keyed by), a root link swapped to
    /// another release, a root directory deleted and made again. Requests revalidate the entries they use; this looks at
    /// those holding descriptors that no request has revalidated for an interval, so a deleted file nobody asks for
    /// again does not keep its disk space (nginx closes an unused descriptor after <c>open_file_cache inactive</c>).
    /// </summary>
    private void SweepDescriptors()
    {
        if (_stopping.IsCancellationRequested)
        {
            return;
        }

        try
        {
            long now = Environment.TickCount64;
            foreach (CachedFile entry in _entries.Values)
            {
                if (entry.HoldsHandles && now - entry.ValidatedAt >= _revalidateAfterMs && !StillCurrent(entry))
                {
                    Invalidate(entry);
                }
            }
        }
        catch (Exception ex)
        {
            // A timer callback must not throw (the process would end); the next period looks again.
            Log.DescriptorSweepFailed(_logger, ex);
        }
    }

    public void Dispose()
    {
        lock (_writeLock)
        {
            _disposed = true;
        }

        _stopping.Cancel();
        _sweep.Dispose();
        _compressionQueue?.Writer.TryComplete();
        _watcher?.Dispose();
        _metrics.Unregister(this);
        Clear();
    }
}
