using System.Buffers;
using System.Buffers.Text;
using System.Collections.Concurrent;
using System.Security.Cryptography;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Files;

/// <summary>
/// The content-hash entity tag of one file version: <c>"</c> + the first 128 bits of the SHA-256 of its bytes in
/// base64url + <c>"</c> (24 characters), so every server holding the same bytes sends the same tag whatever the
/// files' modification times. SHA-256 rather than a faster non-cryptographic hash: it is in the base library
/// (System.IO.Hashing is not available to this build), hardware-accelerated, and any tool can compute the same tag
/// (<c>openssl dgst -sha256 -binary | head -c 16 | basenc --base64url</c>, padding removed).
/// </summary>
/// <remarks>
/// Computed once per version: from the cached bytes when the file is small, otherwise by reading the file off the
/// request path, between two identical stamps (a version that changed while it was read gets no tag at all, never a
/// tag of mixed bytes). Until it is known, <see cref="ETag"/> is <see langword="null"/>: responses then carry no
/// ETag (Last-Modified still validates), and a request with an entity-tag condition waits for it (<see cref="WhenReady"/>),
/// so a tag is never compared against anything but the real one and one version never has two tags. Hashes read from
/// files are shared in the process by file and stamp (<see cref="Share"/>), running or done.
/// </remarks>
// _unwatched is never disposed: a CancellationTokenSource without a timer holds nothing but memory.
#pragma warning disable CA1001
internal sealed class ContentHash
#pragma warning restore CA1001
{
    private const int HashedBits = 128;
    private const int ReadSize = 256 * 1024;
    private const long StampCheckInterval = 256L * ReadSize;

    // The most versions kept known once hashed (a path and a tag each, about 200 bytes): past it, those not running are
    // forgotten and hashed again when next asked for.
    internal const int MaxKnown = 4096;

    // Every version hashed from its file in the process, running or done, by physical path (the latest version asked
    // for): caches over the same files (the static lane's and UseFastFiles' for one root, FastResults'), requests with
    // no cache entry, and a cache entry built again after eviction all share one read of each version, and a version
    // hashed once is not read again while it stays the file's version.
    private static readonly ConcurrentDictionary<string, ContentHash> Known = new(StringComparer.Ordinal);

    // Known's size, kept beside it: ConcurrentDictionary.Count takes every lock, and a first request for each file
    // (without the cache) adds an entry.
    private static int _knownCount;

    private readonly string? _path;
    private readonly FileStamp _stamp;
    private readonly CancellationToken _stopping;

    // Dropped once the tag is known: a remembered hash must not keep its cache (and the cache's entries) alive.
    private SemaphoreSlim? _gate;
    private SemaphoreSlim? _neededGate;
    private Action? _changed;
    private string? _etag;
    private Task? _running;

    // Only for a hash that requests with no cache entry started: it runs while one of them waits (the last to leave
    // cancels it), as each such request's own hash did, but a burst of them reads the file once.
    private readonly CancellationTokenSource? _unwatched;
    private int _waiters;
    private volatile bool _abandoned;

    // A cache took it over (Adopt): it runs to its end, or until that cache stops, whoever waits.
    private volatile bool _adopted;
    private CancellationTokenRegistration _adoption;

    // Set, under the lock on _unwatched, once the computation has ended: an adoption after that registers nothing.
    private bool _ended;

    // Ended by cancellation (its cache stopped, or its last waiting request left), which says nothing of the version.
    private volatile bool _stopped;

    // Set when a request waits for this tag: its computation then starts at once, not behind other files' in the gate.
    private TaskCompletionSource? _needed;

    // For a hash caches started: the caches and keys whose entries took it, asked whether they still hold it. A version no entry
    // holds any more (evicted, replaced) when its turn comes, and no request waits for, is not read: 150 files of 2 MiB asked
    // for once through a cache of 10 entries otherwise read all 300 MiB, one file after another, for tags nobody keeps.
    private (IContentHashHolder Holder, string Key)[]? _holders;

    // _holders once the computation has ended: nothing more is asked of holders, and none is added (a finished hash stays
    // known and is handed to every rebuild of its version).
    private static readonly (IContentHashHolder Holder, string Key)[] Ended = [];

    private ContentHash(string etag)
    {
        _etag = etag;
        _running = Task.CompletedTask;
    }

    private ContentHash(string path, FileStamp stamp, SemaphoreSlim? gate, SemaphoreSlim? neededGate, Action? changed, CancellationToken stopping)
    {
        _path = path;
        _stamp = stamp;
        _gate = gate;
        _neededGate = neededGate;
        _changed = changed;
        _stopping = stopping;
    }

    private ContentHash(string path, FileStamp stamp)
    {
        _path = path;
        _stamp = stamp;
        _unwatched = new CancellationTokenSource();
        _stopping = _unwatched.Token;
    }

    /// <summary>
    /// The quoted entity tag, or <see langword="null"/> while it is not known (or the version changed while read). A hash
    /// stopped by cancellation may still take its version's tag later, from a request that hashed the version again
    /// (<see cref="WhenNeededByAsync"/>).
    /// </summary>
    public string? ETag => Volatile.Read(ref _etag);

    /// <summary>The tag of bytes already in memory.</summary>
    public static ContentHash Of(ReadOnlySpan<byte> content)
    {
        Span<byte> digest = stackalloc byte[SHA256.HashSizeInBytes];
        SHA256.HashData(content, digest);
        return new ContentHash(Format(digest));
    }

    /// <summary>
    /// The tag of the file at <paramref name="path"/> as of <paramref name="stamp"/>, computed on the thread pool when
    /// <see cref="Start"/> or <see cref="WhenReady"/> is first called, one file at a time per <paramref name="gate"/>.
    /// <paramref name="changed"/> runs when the file turned out not to be that version any more. A hash started early
    /// for a waiting request (see <see cref="WhenNeededAsync"/>) does not wait for <paramref name="gate"/> but for a
    /// turn of <paramref name="neededGate"/>, when given.
    /// </summary>
    public static ContentHash ForFile(string path, FileStamp stamp, SemaphoreSlim? gate, SemaphoreSlim? neededGate, Action? changed, CancellationToken stopping)
        => new(path, stamp, gate, neededGate, changed, stopping);

    /// <summary>
    /// The tag of the file at <paramref name="path"/> as of <paramref name="stamp"/> for a response with no cache entry:
    /// the process's hash of that version, running or done, if there is one; else a new one, computed only once a
    /// request waits for it (<see cref="WhenNeededByAsync"/>) and only while one does.
    /// </summary>
    public static ContentHash ForRequests(string path, FileStamp stamp)
        => Known.TryGetValue(path, out ContentHash? known) && known.Serves(stamp, startedOnly: false) ? known : Share(new ContentHash(path, stamp));

    /// <summary>
    /// The process's hash of <paramref name="mine"/>'s version if one is running or done (a cache's own hash is only
    /// given one a request or a cache has started), else <paramref name="mine"/>, now the known one. A hash that ends
    /// without a tag is forgotten, so the next asks again.
    /// </summary>
    public static ContentHash Share(ContentHash mine)
    {
        string path = mine._path!;
        while (true)
        {
            if (Known.TryGetValue(path, out ContentHash? known))
            {
                if (known.Serves(mine._stamp, startedOnly: mine._unwatched is null))
                {
                    return known;
                }

                if (Known.TryUpdate(path, mine, known))
                {
                    return mine;
                }
            }
            else if (Known.TryAdd(path, mine))
            {
                if (Interlocked.Increment(ref _knownCount) > MaxKnown)
                {
                    Trim();
                }

                return mine;
            }
        }
    }

    private static void Forget(KeyValuePair<string, ContentHash> pair)
    {
        if (Known.TryRemove(pair))
        {
            Interlocked.Decrement(ref _knownCount);
        }
    }

    /// <summary>
    /// For a cache whose entry under <paramref name="key"/> holds (or is about to hold) this hash. A hash queued behind
    /// other files' that no such entry holds when its turn comes stops (as when its cache stops) unless a request waits
    /// for it; one already reading runs to its end. A hash given no holder is always held. Each cache and key counts
    /// once, and a hash that has ended takes none.
    /// </summary>
    public void HeldBy(IContentHashHolder holder, string key)
    {
        while (true)
        {
            (IContentHashHolder Holder, string Key)[]? holders = Volatile.Read(ref _holders);
            if (ReferenceEquals(holders, Ended)
                || (holders is not null && Array.Exists(holders, h => ReferenceEquals(h.Holder, holder) && string.Equals(h.Key, key, StringComparison.Ordinal))))
            {
                return;
            }

            (IContentHashHolder, string)[] more = holders is null ? [(holder, key)] : [.. holders, (holder, key)];
            if (Interlocked.CompareExchange(ref _holders, more, holders) == holders)
            {
                return;
            }
        }
    }

    // Whether anything still needs the tag: a cache entry that holds the hash, or a request waiting for it.
    private bool StillWanted()
        => Volatile.Read(ref _holders) is not { Length: > 0 } holders
            || Array.Exists(holders, h => h.Holder.Holds(h.Key, this))
            || Volatile.Read(ref _needed) is { Task.IsCompleted: true };

    /// <summary>
    /// For a cache whose entry now holds this hash: if requests started it, it no longer stops when the last of them
    /// leaves (the entry needs the tag), only when <paramref name="stopping"/> (the cache's) is cancelled.
    /// </summary>
    public void Adopt(CancellationToken stopping)
    {
        if (_unwatched is { } unwatched && !_abandoned)
        {
            _adopted = true;

            // The latest cache to take it over stops it; the registration goes when the hash ends, so a long-lived
            // cache's token does not keep every hash it ever took over.
            CancellationTokenRegistration registration = stopping.UnsafeRegister(static s => ((CancellationTokenSource)s!).Cancel(), unwatched);
            lock (unwatched)
            {
                if (_ended)
                {
                    registration.Dispose();
                    return;
                }

                _adoption.Dispose();
                _adoption = registration;
            }
        }
    }

    // Whether this hash gives (or will give) the tag of the version stamped so.
    private bool Serves(FileStamp stamp, bool startedOnly)
        => _stamp == stamp && !Failed && !_abandoned && (!startedOnly || Volatile.Read(ref _running) is not null);

    /// <summary>Whether <paramref name="path"/>'s known hash is <paramref name="hash"/> (for tests).</summary>
    internal static bool IsKnown(string path, ContentHash hash) => Known.TryGetValue(path, out ContentHash? known) && ReferenceEquals(known, hash);

    // Over the bound: every version not being hashed now is forgotten (hashed again if asked for), at once, so the cost
    // of going through the table is paid once per MaxKnown new versions.
    private static void Trim()
    {
        foreach (KeyValuePair<string, ContentHash> pair in Known)
        {
            if (Volatile.Read(ref pair.Value._running) is not { IsCompleted: false })
            {
                Forget(pair);
            }
        }
    }

    /// <summary>Whether the computation has ended without a tag (the file changed while read, or could not be read).</summary>
    public bool Failed => Volatile.Read(ref _running) is { IsCompleted: true } && ETag is null;

    /// <summary>Starts computing the tag in the background if nobody has yet.</summary>
    public void Start() => _ = WhenReady();

    /// <summary>Completes (never faults) once <see cref="ETag"/> is final.</summary>
    public Task WhenReady()
    {
        Task? running = Volatile.Read(ref _running);
        if (running is not null)
        {
            return running;
        }

        var created = new Task<Task>(ComputeAsync);
        running = Interlocked.CompareExchange(ref _running, created.Unwrap(), null);
        if (running is not null)
        {
            return running;
        }

        created.Start(TaskScheduler.Default);
        return _running!;
    }

    /// <summary>
    /// Completes once <see cref="ETag"/> is final, for a request that waits for it: the computation starts now if it
    /// is still queued behind other files' (the root's gate runs background hashes one at a time, so a request would
    /// otherwise wait for hashes of unrelated files, each as long as its file). Throws when
    /// <paramref name="cancellationToken"/> (the request's abort) is cancelled first; the computation goes on.
    /// </summary>
    public Task WhenNeededAsync(CancellationToken cancellationToken)
    {
        Task running = WhenReady();
        if (running.IsCompleted)
        {
            return running;
        }

        if (_gate is not null)
        {
            Needed().TrySetResult();
        }

        return running.WaitAsync(cancellationToken);
    }

    /// <summary>
    /// <see cref="WhenNeededAsync"/> for a request: false, instead of an exception, when the client left first
    /// (<paramref name="requestAborted"/>); there is then nothing to answer.
    /// </summary>
    public async Task<bool> WhenNeededByAsync(CancellationToken requestAborted)
    {
        CancellationTokenSource? unwatched = _unwatched;
        if (unwatched is not null)
        {
            Interlocked.Increment(ref _waiters);
        }

        try
        {
            await WhenNeededAsync(requestAborted);
        }
        catch (OperationCanceledException) when (requestAborted.IsCancellationRequested)
        {
            return false;
        }
        finally
        {
            // The last request waiting for a hash only requests started leaves before it ends: nobody needs the file
            // read on (a client that asks and leaves must not buy a whole read of a large file). Later requests for the
            // version start a new hash (Share passes an abandoned one by).
            if (unwatched is not null && Interlocked.Decrement(ref _waiters) == 0 && !_adopted && Volatile.Read(ref _running) is { IsCompleted: false })
            {
                _abandoned = true;
                unwatched.Cancel();
            }
        }

        // Stopped for someone else: this request was given a request-started hash before its last waiter left (or joined
        // just as it did), or another host's cache that stopped. That says nothing of the version, so hash it again for
        // this request rather than answer its condition with no tag. The tag is the version's, so this hash (the one
        // the response reads) takes it.
        if (_stopped && ETag is null)
        {
            ContentHash again = ForRequests(_path!, _stamp);
            if (!await again.WhenNeededByAsync(requestAborted))
            {
                return false;
            }

            if (again.ETag is { } etag)
            {
                Interlocked.CompareExchange(ref _etag, etag, null);
            }
        }

        return true;
    }

    // The signal that a request waits, made by whichever side (a waiting request, the computation) comes first.
    private TaskCompletionSource Needed()
        => Volatile.Read(ref _needed)
            ?? Interlocked.CompareExchange(ref _needed, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously), null)
            ?? _needed!;

    /// <summary>Formats a SHA-256 digest as a quoted entity tag.</summary>
    internal static string Format(ReadOnlySpan<byte> sha256)
        => string.Concat("\"", Base64Url.EncodeToString(sha256[..(HashedBits / 8)]), "\"");

    /// <summary>Hashes the file if it is still <paramref name="stamp"/> from start to end; null otherwise.</summary>
    internal static string? Compute(SafeFileHandle file, FileStamp stamp, CancellationToken cancellationToken)
    {
        if (FileStamp.FromHandle(file) != stamp)
        {
            return null;
        }

        using var sha = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        byte[] buffer = ArrayPool<byte>.Shared.Rent(ReadSize);
        try
        {
            long offset = 0;
            while (offset < stamp.Length)
            {
                cancellationToken.ThrowIfCancellationRequested();

                // Every 64 MiB: a file deleted or replaced by rename (its inode's change time moves as its last link goes)
                // or written to is no longer the version, so its tag will not be kept: stop reading it (a large file would
                // otherwise be read to its end, its disk space held, for nothing).
                if (offset > 0 && offset % StampCheckInterval == 0 && FileStamp.FromHandle(file) != stamp)
                {
                    return null;
                }

                int read = RandomAccess.Read(file, buffer.AsSpan(0, (int)Math.Min(ReadSize, stamp.Length - offset)), offset);
                if (read == 0)
                {
                    return null;
                }

                sha.AppendData(buffer, 0, read);
                offset += read;
            }
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }

        if (FileStamp.FromHandle(file) != stamp)
        {
            return null;
        }

        Span<byte> digest = stackalloc byte[SHA256.HashSizeInBytes];
        sha.GetHashAndReset(digest);
        return Format(digest);
    }

    private async Task ComputeAsync()
    {
        bool entered = false;
        SemaphoreSlim? neededEntered = null;
        try
        {
            if (_gate is not null)
            {
                Task turn = _gate.WaitAsync(_stopping);
                if (await Task.WhenAny(turn, Needed().Task).ConfigureAwait(false) == turn)
                {
                    await turn.ConfigureAwait(false);
                    entered = true;

                    // Queued behind other files' hashes, which may have taken long: its entries may have gone meanwhile.
                    if (!StillWanted())
                    {
                        throw new OperationCanceledException();
                    }
                }
                else
                {
                    // A request waits for this tag: hash it now, among at most a few such, and give back the turn when
                    // it comes.
                    _ = turn.ContinueWith(static (t, gate) => ((SemaphoreSlim)gate!).Release(), _gate, CancellationToken.None, TaskContinuationOptions.OnlyOnRanToCompletion, TaskScheduler.Default);
                    if (_neededGate is not null)
                    {
                        await _neededGate.WaitAsync(_stopping).ConfigureAwait(false);
                        neededEntered = _neededGate;
                    }
                }
            }

            string? etag;
            while (true)
            {
                using (SafeFileHandle file = FileVersion.OpenHandle(_path!))
                {
                    etag = Compute(file, _stamp, _stopping);
                }

                // A version changed moments ago may have been read while a write was still landing (its stamp is set
                // first, FileStamp.ChangedRecently): read it again once it has settled, so its tag is of its bytes.
                if (etag is null || !_stamp.ChangedRecently())
                {
                    break;
                }

                await Task.Delay(FileStamp.SettleTime, _stopping).ConfigureAwait(false);
            }

            Volatile.Write(ref _etag, etag);
            if (etag is null)
            {
                _changed?.Invoke();
            }
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or OperationCanceledException)
        {
            // Gone, unreadable, or the app is stopping: this version keeps no tag, and a changed file gets a new version.
            if (ex is OperationCanceledException)
            {
                _stopped = true;
            }
            else
            {
                _changed?.Invoke();
            }
        }
        finally
        {
            if (entered)
            {
                _gate!.Release();
            }

            neededEntered?.Release();
            if (ETag is null)
            {
                Forget(KeyValuePair.Create(_path!, this));
            }

            _gate = null;
            _neededGate = null;
            _changed = null;
            Volatile.Write(ref _holders, Ended);
            if (_unwatched is { } unwatched)
            {
                lock (unwatched)
                {
                    _ended = true;
                    _adoption.Dispose();
                }
            }
        }
    }
}

/// <summary>A cache whose entries hold content hashes (<see cref="ContentHash.HeldBy"/>).</summary>
internal interface IContentHashHolder
{
    /// <summary>Whether the entry under <paramref name="key"/> holds <paramref name="hash"/> now.</summary>
    bool Holds(string key, ContentHash hash);
}
