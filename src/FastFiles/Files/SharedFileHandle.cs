using Microsoft.Win32.SafeHandles;

namespace FastFiles.Files;

/// <summary>
/// An open descriptor of one file version kept across requests (nginx's <c>open_file_cache</c>), so a body read
/// from disk costs no open and close. Requests lease it; retiring it (the cache saw a change, evicted the entry,
/// or was disposed) refuses new leases at once and closes the descriptor when the last lease ends, so a request
/// never reads through a descriptor the cache already knows is stale, and an in-flight one is never cut off.
/// </summary>
internal sealed class SharedFileHandle
{
    private readonly SafeFileHandle _handle;
    private int _retired;

    public SharedFileHandle(SafeFileHandle handle) => _handle = handle;

    public bool IsRetired => Volatile.Read(ref _retired) != 0;

    /// <summary>The descriptor with one more reference held, or <see langword="null"/> once retired; pair with <see cref="Release"/>.</summary>
    public SafeFileHandle? TryAcquire()
    {
        if (IsRetired)
        {
            return null;
        }

        bool added = false;
        try
        {
            _handle.DangerousAddRef(ref added);
        }
        catch (ObjectDisposedException)
        {
            return null;
        }

        // Retired between the check and the reference: SafeHandle still accepts references while others are held,
        // so look again and back out rather than read through a descriptor the cache has given up.
        if (IsRetired)
        {
            _handle.DangerousRelease();
            return null;
        }

        return _handle;
    }

    public void Release() => _handle.DangerousRelease();

    /// <summary>Refuses further leases; the descriptor closes when the last one is released. True the first time.</summary>
    public bool Retire()
    {
        if (Interlocked.Exchange(ref _retired, 1) != 0)
        {
            return false;
        }

        _handle.Dispose();
        return true;
    }
}
