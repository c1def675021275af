using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Files;

/// <summary>
/// What identifies one version of a file: device, inode, size, and modification and change times with
/// nanoseconds. The inode catches atomic replacement (rename over), the change time catches writes that
/// restore the modification time (<c>touch -d</c>, <c>cp -p</c>), and nanoseconds catch same-size writes within
/// one second. Read with one <c>statx(2)</c> on Linux, whose struct layout is the same on every architecture.
/// </summary>
internal readonly partial record struct FileStamp(ulong Device, ulong Inode, long Length, long ModifiedNanoseconds, long ChangedNanoseconds, bool IsDirectory)
{
    private const int AtFdCwd = -100;
    private const int AtEmptyPath = 0x1000;
    private const int AtStatxDontSync = 0x4000;
    private const uint StatxBasicStats = 0x7ff;
    private const ushort FileTypeMask = 0xF000;
    private const ushort DirectoryType = 0x4000;
    private const ushort RegularType = 0x8000;
    private const int StatxSize = 256;

    private static bool s_statxMissing;

    /// <summary>The modification time as UTC .NET ticks (100 ns).</summary>
    public long ModifiedTicks => DateTime.UnixEpoch.Ticks + (ModifiedNanoseconds / 100);

    /// <summary>
    /// Whether an open file still holds the bytes this stamp describes: its length and modification time (fstat on the
    /// descriptor) are unchanged. Inode and change time are not compared: a file renamed over or unlinked keeps its bytes
    /// on the open descriptor (the change time moves then), so only writes into this inode make a body inconsistent.
    /// </summary>
    public bool StillMatches(SafeFileHandle handle)
    {
        FileStamp now = FromHandle(handle);
        return now.Length == Length && now.ModifiedNanoseconds == ModifiedNanoseconds;
    }

    /// <summary>Stats <paramref name="path"/> (following links). False when it does not exist or is not a file or directory.</summary>
    public static bool TryGet(string path, out FileStamp stamp)
    {
        if (OperatingSystem.IsLinux() && !s_statxMissing)
        {
            return TryStatx(AtFdCwd, path, 0, out stamp);
        }

        return TryGetPortable(path, out stamp);
    }

    /// <summary>Stats an open file (fstat semantics).</summary>
    public static FileStamp FromHandle(SafeFileHandle handle)
    {
        if (OperatingSystem.IsLinux() && !s_statxMissing)
        {
            bool added = false;
            try
            {
                handle.DangerousAddRef(ref added);
                if (TryStatx((int)handle.DangerousGetHandle(), string.Empty, AtEmptyPath, out FileStamp stamp))
                {
                    return stamp;
                }
            }
            finally
            {
                if (added)
                {
                    handle.DangerousRelease();
                }
            }
        }

        long length = RandomAccess.GetLength(handle);
        long ticks = File.GetLastWriteTimeUtc(handle).Ticks;
        long nanos = (ticks - DateTime.UnixEpoch.Ticks) * 100;
        return new FileStamp(0, 0, length, nanos, nanos, false);
    }

    private static unsafe bool TryStatx(int dirFd, string path, int flags, out FileStamp stamp)
    {
        stamp = default;
        byte* buffer = stackalloc byte[StatxSize];
        int result;
        try
        {
            result = Statx(dirFd, path, flags | AtStatxDontSync, StatxBasicStats, buffer);
        }
        catch (EntryPointNotFoundException)
        {
            // glibc older than 2.28: fall back for good.
            s_statxMissing = true;
            return TryGetPortable(path, out stamp);
        }

        if (result != 0)
        {
            return false;
        }

        ushort mode = *(ushort*)(buffer + 28);
        ushort type = (ushort)(mode & FileTypeMask);
        if (type != RegularType && type != DirectoryType)
        {
            return false;
        }

        ulong inode = *(ulong*)(buffer + 32);
        long size = (long)*(ulong*)(buffer + 40);
        long ctime = (*(long*)(buffer + 96) * 1_000_000_000L) + *(uint*)(buffer + 104);
        long mtime = (*(long*)(buffer + 112) * 1_000_000_000L) + *(uint*)(buffer + 120);
        ulong device = ((ulong)*(uint*)(buffer + 136) << 32) | *(uint*)(buffer + 140);
        stamp = new FileStamp(device, inode, size, mtime, ctime, type == DirectoryType);
        return true;
    }

    private static bool TryGetPortable(string path, out FileStamp stamp)
    {
        var info = new FileInfo(path);
        if (info.Exists)
        {
            long nanos = (info.LastWriteTimeUtc.Ticks - DateTime.UnixEpoch.Ticks) * 100;
            stamp = new FileStamp(0, 0, info.Length, nanos, nanos, false);
            return true;
        }

        if (Directory.Exists(path))
        {
            stamp = new FileStamp(0, 0, 0, 0, 0, true);
            return true;
        }

        stamp = default;
        return false;
    }

    [LibraryImport("libc", EntryPoint = "statx", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    private static unsafe partial int Statx(int dirFd, string path, int flags, uint mask, byte* buffer);
}
