using Microsoft.Win32.SafeHandles;

namespace FastFiles.Files;

/// <summary>
/// A descriptor for one body of a file version: the one the open-file cache keeps (leased, no open per request) or one
/// opened for this response, held only while it still holds that version. An in-place write keeps the descriptor but
/// not the stamp, so the headers built from the version would describe other bytes.
/// </summary>
internal readonly struct VersionHandle : IDisposable
{
    private readonly SharedFileHandle? _shared;

    private VersionHandle(SafeFileHandle handle, SharedFileHandle? shared)
    {
        Handle = handle;
        _shared = shared;
    }

    /// <summary>The descriptor, or <see langword="null"/> for the default value.</summary>
    public SafeFileHandle? Handle { get; }

    /// <summary>
    /// Leases <paramref name="version"/>'s kept descriptor or, unless <paramref name="leaseOnly"/>, opens its path, and
    /// compares the descriptor with the version's stamp. False, with nothing held, when there is no descriptor to lease
    /// (and none may be opened) or the file no longer has that version. An open or a stat that fails throws (nothing is
    /// held then), as <see cref="FileVersion.OpenHandle(string)"/> does: what a failure means (a 404, a 503, a hand-off) is the
    /// caller's.
    /// </summary>
    public static bool TryAcquire(FileVersion version, bool leaseOnly, out VersionHandle handle)
    {
        handle = default;
        SharedFileHandle? shared = version.SharedHandle;
        SafeFileHandle? descriptor = shared?.TryAcquire();
        bool same;
        if (descriptor is null)
        {
            if (leaseOnly || version.PhysicalPath is null)
            {
                return false;
            }

            // Opened here: the open reads the descriptor's stamp itself.
            descriptor = FileVersion.OpenHandle(version.PhysicalPath, out FileStamp opened);
            handle = new VersionHandle(descriptor, null);
            same = opened == version.Stamp;
        }
        else
        {
            handle = new VersionHandle(descriptor, shared);
            try
            {
                same = FileStamp.FromHandle(descriptor) == version.Stamp;
            }
            catch
            {
                handle.Dispose();
                handle = default;
                throw;
            }
        }

        if (!same)
        {
            handle.Dispose();
            handle = default;
            return false;
        }

        return true;
    }

    /// <summary>Ends the lease, or closes the descriptor opened for this body.</summary>
    public void Dispose()
    {
        if (_shared is not null)
        {
            _shared.Release();
        }
        else
        {
            Handle?.Dispose();
        }
    }
}
