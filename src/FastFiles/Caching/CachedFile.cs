using FastFiles.Files;
using FastFiles.Http;

namespace FastFiles.Caching;

/// <summary>
/// One cached resource: the identity version, its precompressed variants, and the response settings computed
/// once (content type, Cache-Control, Vary). Immutable except for its freshness and recency ticks; a change on
/// disk replaces the whole entry, so a response never mixes two versions.
/// </summary>
internal sealed class CachedFile
{
    private long _validatedAt;
    private long _lastAccess;
    private int _available;
    private int _pending;
    private int _queued;

    public CachedFile(
        string key,
        string physicalPath,
        FileVersion identity,
        FileVersion?[] variants,
        FileStamp?[] sidecarStamps,
        FileResponseSettings settings,
        bool probesSidecars,
        long now,
        ContentCodings compressible = ContentCodings.None)
    {
        ProbesSidecars = probesSidecars;
        Key = key;
        PhysicalPath = physicalPath;
        Identity = identity;
        Variants = variants;
        SidecarStamps = sidecarStamps;
        SidecarPaths = Array.ConvertAll(Sidecar.All, s => physicalPath + s.Suffix);
        Settings = settings;
        _validatedAt = now;
        _lastAccess = now;
        ContentCodings available = ContentCodings.None;
        foreach (FileVersion? variant in variants)
        {
            if (variant is not null)
            {
                available |= Sidecar.FromToken(variant.ContentEncoding);
            }
        }

        _available = (int)available;

        // Sidecars on disk win: only codings without a usable sidecar are made in memory.
        _pending = (int)(compressible & ~available);

        ContentBytes = (identity.Content?.Length ?? 0) + variants.Sum(v => (long)(v?.Content?.Length ?? 0));
        _builtYoung = !Settled();
    }

    public string Key { get; }

    /// <summary>
    /// Built from versions changed less than <see cref="FileStamp.SettleTime"/> before (a write may still have been under
    /// way): once they have settled (<see cref="Settled"/>), its bytes are compared with the files' once more.
    /// </summary>
    public bool BuiltYoung => Volatile.Read(ref _builtYoung);

    private bool _builtYoung;

    /// <summary>The bytes were found to be the settled files' own.</summary>
    public void MarkSettled() => Volatile.Write(ref _builtYoung, false);

    /// <summary>Whether none of the versions read has changed within <see cref="FileStamp.SettleTime"/> of now.</summary>
    public bool Settled()
        => !Identity.Stamp.ChangedRecently() && !Array.Exists(Variants, v => v is not null && v.Stamp.ChangedRecently());

    public string PhysicalPath { get; }

    public FileVersion Identity { get; }

    /// <summary>
    /// Usable variants by <see cref="Sidecar"/> index (br, zstd, gzip): sidecars, and variants compressed in memory once
    /// <see cref="Publish"/> adds them; null where absent or stale.
    /// </summary>
    public FileVersion?[] Variants { get; }

    /// <summary>What was on disk for each sidecar name when the entry was built (null: no file).</summary>
    public FileStamp?[] SidecarStamps { get; }

    /// <summary>Physical paths of the sidecar names, for revalidation without building strings per check.</summary>
    public string[] SidecarPaths { get; }

    /// <summary>Whether sidecars were looked for (precompressed files enabled), and so must be re-checked.</summary>
    public bool ProbesSidecars { get; }

    /// <summary>The codings <see cref="Variants"/> holds.</summary>
    public ContentCodings Available => (ContentCodings)Volatile.Read(ref _available);

    /// <summary>Codings to be compressed in memory for this version and not made yet (none once made or found not worth it).</summary>
    public ContentCodings Pending => (ContentCodings)Volatile.Read(ref _pending);

    public FileResponseSettings Settings { get; }

    /// <summary>Bytes of content held: the identity's and every variant's. Changes only under the cache's write lock.</summary>
    public long ContentBytes { get; private set; }

    /// <summary>
    /// Response bytes a connection-level consumer of this cache (the static lane) prebuilt for this entry; they live
    /// and die with the entry, so a changed file never gets old bytes.
    /// </summary>
    public object? Prebuilt { get; set; }

    /// <summary>Whether a version of this entry still holds a descriptor open across requests.</summary>
    public bool HoldsHandles => Identity.SharedHandle is { IsRetired: false } || Array.Exists(Variants, v => v?.SharedHandle is { IsRetired: false });

    public long ValidatedAt => Volatile.Read(ref _validatedAt);

    public long LastAccess => Volatile.Read(ref _lastAccess);

    public void MarkValidated(long now) => Volatile.Write(ref _validatedAt, now);

    /// <summary>Forces the next request to re-check the file system.</summary>
    public void MarkSuspect() => Volatile.Write(ref _validatedAt, long.MinValue / 2);

    public void Touch(long now)
    {
        // Recency at one-second grain is plenty for eviction and keeps hits from writing a shared line each time.
        if (now - Volatile.Read(ref _lastAccess) >= 1000)
        {
            Volatile.Write(ref _lastAccess, now);
        }
    }

    /// <summary>Claims this entry's one place in the compression queue; false when it already has it.</summary>
    public bool TryMarkQueued() => Interlocked.Exchange(ref _queued, 1) == 0;

    /// <summary>Gives the place back (the queue was full), so a later request may queue the entry again.</summary>
    public void UnmarkQueued() => Volatile.Write(ref _queued, 0);

    /// <summary>
    /// Adds a variant compressed from this entry's own version (called under the cache's write lock): the variant is
    /// visible before its coding is announced in <see cref="Available"/>.
    /// </summary>
    public void Publish(ContentCodings coding, FileVersion variant)
    {
        Volatile.Write(ref Variants[Sidecar.IndexOf(coding)], variant);
        ContentBytes += variant.Content!.Length;
        Interlocked.Or(ref _available, (int)coding);
        Settle(coding);
    }

    /// <summary>Stops waiting for <paramref name="coding"/>: made, or not worth keeping.</summary>
    public void Settle(ContentCodings coding) => Interlocked.And(ref _pending, ~(int)coding);

    public FileVersion Select(ContentCodings coding)
        => coding == ContentCodings.None ? Identity : Volatile.Read(ref Variants[Sidecar.IndexOf(coding)]) ?? Identity;
}
