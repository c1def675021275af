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

    public CachedFile(
        string key,
        string physicalPath,
        FileVersion identity,
        FileVersion?[] variants,
        FileStamp?[] sidecarStamps,
        FileResponseSettings settings,
        bool probesSidecars,
        long now)
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
        foreach (FileVersion? variant in variants)
        {
            if (variant is not null)
            {
                Available |= Sidecar.FromToken(variant.ContentEncoding);
            }
        }

        ContentBytes = (identity.Content?.Length ?? 0) + variants.Sum(v => (long)(v?.Content?.Length ?? 0));
    }

    public string Key { get; }

    public string PhysicalPath { get; }

    public FileVersion Identity { get; }

    /// <summary>Usable sidecars by <see cref="Sidecar"/> index (br, zstd, gzip); null where absent or stale.</summary>
    public FileVersion?[] Variants { get; }

    /// <summary>What was on disk for each sidecar name when the entry was built (null: no file).</summary>
    public FileStamp?[] SidecarStamps { get; }

    /// <summary>Physical paths of the sidecar names, for revalidation without building strings per check.</summary>
    public string[] SidecarPaths { get; }

    /// <summary>Whether sidecars were looked for (precompressed files enabled), and so must be re-checked.</summary>
    public bool ProbesSidecars { get; }

    public ContentCodings Available { get; }

    public FileResponseSettings Settings { get; }

    public long ContentBytes { get; }

    /// <summary>Whether a version of this entry still holds a descriptor open across requests.</summary>
    public bool HoldsHandles => Identity.SharedHandle is { IsRetired: false } || Array.Exists(Variants, v => v?.SharedHandle is { IsRetired: false });

    /// <summary>Closes (once leases end) the descriptors this entry's versions hold; returns how many it retired.</summary>
    public int RetireHandles()
    {
        int retired = Identity.SharedHandle?.Retire() == true ? 1 : 0;
        foreach (FileVersion? variant in Variants)
        {
            if (variant?.SharedHandle?.Retire() == true)
            {
                retired++;
            }
        }

        return retired;
    }

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

    public FileVersion Select(ContentCodings coding)
        => coding == ContentCodings.None ? Identity : Variants[Sidecar.IndexOf(coding)] ?? Identity;
}
