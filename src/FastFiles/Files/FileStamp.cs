using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Files;

/// <summary>
/// What identifies one version of a file: device, inode, size, and modification and change times with
/// nanoseconds. The inode catches atomic replacement (rename over), the change time catches writes that
/// restore the modification time (<c>touch -d</c>, <c>cp -p</c>), and nanoseconds catch same-size writes within
/// one second. Read with one <c>statx(2)</c> on Linux, whose struct layout is the same on every architecture.
/// </summary>
/// <remarks>
/// The nanosecond counts are for telling versions apart and may wrap (past 2262 or before 1677 they do not fit 64 bits);
/// dates come from <see cref="ModifiedTicks"/>, computed from the seconds and clamped to what a <see cref="DateTime"/>
/// holds.
/// </remarks>
internal readonly partial record struct FileStamp(ulong Device, ulong Inode, long Length, long ModifiedNanoseconds, long ChangedNanoseconds, bool IsDirectory, long ModifiedTicks)
{
    private const int AtFdCwd = -100;
    private const int AtEmptyPath = 0x1000;
    private const int AtStatxDontSync = 0x4000;
    private const uint StatxBasicStats = 0x7ff;
    private const ushort FileTypeMask = 0xF000;
    private const ushort DirectoryType = 0x4000;
    private const ushort RegularType = 0x8000;
    private const int StatxSize = 256;

    private const int Eperm = 1;
    private const int Einval = 22;
    private const int Enosys = 38;

    private static bool s_statxMissing;
    private static int s_syncFlag = AtStatxDontSync;

    /// <summary>How long after a change (ctime) bytes read from a file may still belong to a write in progress.</summary>
    public static readonly TimeSpan SettleTime = TimeSpan.FromSeconds(1);

    /// <summary>
    /// Whether the file changed less than <see cref="SettleTime"/> ago (or, the clock having gone back, seems to change
    /// within it). Linux stamps a write before it copies the data in (<c>file_modified</c> precedes the copy in
    /// <c>generic_perform_write</c>), so bytes read between two identical stamps of a file changed this recently can still
    /// mix a write under way with what it replaces: a 48 MiB in-place <c>pwrite</c> left a cached body half old, half new,
    /// under the new version's tag.
    /// </summary>
    public bool ChangedRecently()
    {
        long age = (DateTime.UtcNow.Ticks - DateTime.UnixEpoch.Ticks) * 100 - ChangedNanoseconds;
        long settle = SettleTime.Ticks * 100;
        return age < settle && age > -settle;
    }

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
        // statx(2) takes a C string, which would end at a NUL: "a.txt\0.pdf" is no file (as File.Exists says), never a.txt.
        if (path.Contains('\0'))
        {
            stamp = default;
            return false;
        }

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

        return FromTicks(RandomAccess.GetLength(handle), File.GetLastWriteTimeUtc(handle).Ticks);
    }

    /// <summary>
    /// A file's stamp where only its length and modification time are known (no statx, a file provider): the
    /// nanoseconds are derived from the UTC ticks, and stand for the change time too.
    /// </summary>
    public static FileStamp FromTicks(long length, long utcTicks)
    {
        long nanos = unchecked((utcTicks - DateTime.UnixEpoch.Ticks) * 100);
        return new FileStamp(0, 0, length, nanos, nanos, false, utcTicks);
    }

    /// <summary>Whether statx(2) is there (glibc 2.28 or later); checked on first use.</summary>
    public static bool StatxAvailable => !s_statxMissing;

    /// <summary>
    /// Stats an open descriptor. False (errno set) when the call fails; <paramref name="regular"/> says whether it is a
    /// regular file, and <paramref name="stamp"/> is set for a regular file or a directory.
    /// </summary>
    public static bool TryFromDescriptor(int fd, out FileStamp stamp, out bool regular)
    {
        regular = false;
        int type = Stat(fd, string.Empty, AtEmptyPath, out stamp);
        if (type < 0)
        {
            return false;
        }

        regular = type == RegularType;
        return true;
    }

    private static bool TryStatx(int dirFd, string path, int flags, out FileStamp stamp)
    {
        int type = Stat(dirFd, path, flags, out stamp);
        if (type == StatxMissing)
        {
            // A descriptor (empty path) falls back in FromHandle itself.
            return path.Length > 0 && TryGetPortable(path, out stamp);
        }

        return type is RegularType or DirectoryType;
    }

    // The file type bits, or -1 when the call failed, or StatxMissing; the stamp is set for a file or a directory.
    private const int StatxMissing = -2;

    private static unsafe int Stat(int dirFd, string path, int flags, out FileStamp stamp)
    {
        stamp = default;
        byte* buffer = stackalloc byte[StatxSize];
        int result;
        try
        {
            result = Statx(dirFd, path, flags | s_syncFlag, StatxBasicStats, buffer);
            if (result != 0 && Marshal.GetLastPInvokeError() is Enosys or Eperm or Einval && Refused(buffer))
            {
                if (s_statxMissing)
                {
                    return StatxMissing;
                }

                result = Statx(dirFd, path, flags | s_syncFlag, StatxBasicStats, buffer);
            }
        }
        catch (EntryPointNotFoundException)
        {
            // glibc older than 2.28: fall back for good.
            s_statxMissing = true;
            return StatxMissing;
        }

        if (result != 0)
        {
            return -1;
        }

        ushort mode = *(ushort*)(buffer + 28);
        ushort type = (ushort)(mode & FileTypeMask);
        if (type != RegularType && type != DirectoryType)
        {
            return type;
        }

        ulong inode = *(ulong*)(buffer + 32);
        long size = (long)*(ulong*)(buffer + 40);
        long ctime = unchecked((*(long*)(buffer + 96) * 1_000_000_000L) + *(uint*)(buffer + 104));
        long mtimeSeconds = *(long*)(buffer + 112);
        uint mtimeNanos = *(uint*)(buffer + 120);
        long mtime = unchecked((mtimeSeconds * 1_000_000_000L) + mtimeNanos);
        ulong device = ((ulong)*(uint*)(buffer + 136) << 32) | *(uint*)(buffer + 140);
        stamp = new FileStamp(device, inode, size, mtime, ctime, type == DirectoryType, TicksOf(mtimeSeconds, mtimeNanos));
        return type;
    }

    // statx(2) refused as a call rather than for this path: a seccomp profile (older container runtimes return EPERM,
    // newer ones ENOSYS) or a kernel before 4.11 (ENOSYS), where glibc emulates it over fstatat and rejects
    // AT_STATX_DONT_SYNC (EINVAL). A stat of "/" tells: without the flag it works (emulated: drop the flag for good), or
    // not at all (fall back to .NET's stat for good). Stock serves such files; every one was a 404 here. The caller's
    // errno is kept for a real failure.
    private static unsafe bool Refused(byte* buffer)
    {
        int errno = Marshal.GetLastPInvokeError();
        if (Statx(AtFdCwd, "/", s_syncFlag, StatxBasicStats, buffer) == 0)
        {
            Marshal.SetLastPInvokeError(errno);
            return false;
        }

        if (s_syncFlag != 0 && Statx(AtFdCwd, "/", 0, StatxBasicStats, buffer) == 0)
        {
            s_syncFlag = 0;
            return true;
        }

        s_statxMissing = true;
        return true;
    }

    // Seconds since the epoch as UTC .NET ticks, clamped to DateTime's range (ext4 holds dates to 2446, tmpfs further).
    private static readonly long s_minSeconds = (DateTime.MinValue.Ticks - DateTime.UnixEpoch.Ticks) / TimeSpan.TicksPerSecond;
    private static readonly long s_maxSeconds = (DateTime.MaxValue.Ticks - DateTime.UnixEpoch.Ticks) / TimeSpan.TicksPerSecond;

    internal static long TicksOf(long seconds, uint nanoseconds)
        => seconds < s_minSeconds ? DateTime.MinValue.Ticks
            : seconds >= s_maxSeconds ? DateTime.MaxValue.Ticks - (DateTime.MaxValue.Ticks % TimeSpan.TicksPerSecond)
            : DateTime.UnixEpoch.Ticks + (seconds * TimeSpan.TicksPerSecond) + (nanoseconds / 100);

    private static bool TryGetPortable(string path, out FileStamp stamp)
    {
        var info = new FileInfo(path);
        if (info.Exists)
        {
            stamp = FromTicks(info.Length, info.LastWriteTimeUtc.Ticks);
            return true;
        }

        if (Directory.Exists(path))
        {
            stamp = new FileStamp(0, 0, 0, 0, 0, true, DateTime.UnixEpoch.Ticks);
            return true;
        }

        stamp = default;
        return false;
    }

    [LibraryImport("libc", EntryPoint = "statx", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    private static unsafe partial int Statx(int dirFd, string path, int flags, uint mask, byte* buffer);
}
