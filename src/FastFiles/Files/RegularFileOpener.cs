using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Files;

/// <summary>
/// Opens a regular file for reading and reads its stamp from the descriptor, after the caller's <c>statx</c> of the path
/// (<c>FileVersion.OpenHandle</c>: nothing but a file or directory is opened): <c>openat(O_NONBLOCK)</c>, one
/// <c>statx</c> of the descriptor (the type and stamp of what was opened), one <c>fcntl</c> to clear
/// <c>O_NONBLOCK</c>, and <c>close</c> at the end. .NET's way
/// (<c>File.OpenHandle</c>: <c>openat</c>, <c>fstat</c>, <c>flock(LOCK_SH)</c>, and <c>flock(LOCK_UN)</c> before
/// <c>close</c>) blocks on a FIFO swapped in after the look, and costs one system call more per response with the same
/// looks (a handle made from a descriptor pays one <c>lseek</c> on its first positional read;
/// benchmarks/results/open-2026-11-26).
/// </summary>
/// <remarks>
/// <para><c>O_NONBLOCK</c> makes the open of a FIFO return at once instead of waiting for a writer; the type is then
/// read from the descriptor, so nothing can be swapped in between a look and the open. The flag is cleared once the
/// descriptor is known to be a regular file, so reads and sendfile(2) behave as on any other descriptor.</para>
/// <para>No advisory lock is taken: .NET's shared <c>flock</c> only makes a read fail while another .NET process holds
/// the file with <see cref="FileShare.None"/>. A body read while its file is being written is caught by the stamp
/// checks (the length and modification time are compared again before the last bytes leave), as for writers that take
/// no lock at all; nginx takes none either.</para>
/// </remarks>
internal static partial class RegularFileOpener
{
    private const int AtFdCwd = -100;
    private const int OpenFlags = 0x800 /* O_NONBLOCK */ | 0x80000 /* O_CLOEXEC */ | 0x100 /* O_NOCTTY */; // O_RDONLY = 0
    private const int FSetFl = 4;

    private const int Eintr = 4;
    private const int Enoent = 2;
    private const int Enotdir = 20;
    private const int Eacces = 13;
    private const int Eperm = 1;
    private const int Enametoolong = 36;
    private const int Eloop = 40;
    private const int Enxio = 6;
    private const int Enodev = 19;

    /// <summary>
    /// Whether <see cref="Open"/> applies here: 64-bit Linux with statx(2) (glibc 2.28 or later). A 32-bit process would
    /// need O_LARGEFILE, whose value differs by architecture, for files of 2 GiB and more; it keeps .NET's open.
    /// </summary>
    public static bool Supported => OperatingSystem.IsLinux() && IntPtr.Size == 8 && FileStamp.StatxAvailable;

    /// <summary>
    /// Opens <paramref name="path"/> when it is a regular file. Throws <see cref="FileNotFoundException"/> when there is
    /// nothing to open or it is neither a file nor a directory, <see cref="UnauthorizedAccessException"/> when it may
    /// not be read or is a directory (as <see cref="File.OpenHandle"/>), else an <see cref="IOException"/> whose HResult
    /// is the errno, as .NET's own (<see cref="DescriptorExhaustion"/> reads EMFILE and ENFILE from it).
    /// </summary>
    /// <returns>The handle, or <see langword="null"/> (nothing held) when statx(2) turned out to be missing.</returns>
    public static SafeFileHandle? Open(string path, out FileStamp stamp)
    {
        // The caller has looked at the path (FileVersion.OpenHandle: no device node is opened). The type is read again
        // from the descriptor below, and O_NONBLOCK keeps a FIFO swapped in since from blocking the open.
        int fd;
        while ((fd = OpenAt(AtFdCwd, path, OpenFlags, 0)) < 0)
        {
            int errno = Marshal.GetLastPInvokeError();
            if (errno != Eintr)
            {
                throw ErrorFor(errno, path);
            }
        }

        var handle = new SafeFileHandle(fd, ownsHandle: true);
        try
        {
            if (!FileStamp.TryFromDescriptor(fd, out stamp, out bool regular))
            {
                if (!FileStamp.StatxAvailable)
                {
                    handle.Dispose();
                    return null;
                }

                throw ErrorFor(Marshal.GetLastPInvokeError(), path);
            }

            if (stamp.IsDirectory)
            {
                // As File.OpenHandle: a directory opened for reading is "access denied".
                throw new UnauthorizedAccessException($"Access to the path '{path}' is denied.");
            }

            if (!regular)
            {
                throw new FileNotFoundException("Not a regular file.", path);
            }

            if (Fcntl(fd, FSetFl, 0) < 0)
            {
                throw ErrorFor(Marshal.GetLastPInvokeError(), path);
            }

            return handle;
        }
        catch
        {
            handle.Dispose();
            throw;
        }
    }

    // Nothing openable there: FileNotFoundException, as the statx(2) pre-check gave for every such errno before. A socket
    // or a device node without a driver (ENXIO, ENODEV) is no file to serve, as a FIFO is not.
    private static Exception ErrorFor(int errno, string path) => errno switch
    {
        Enoent or Enotdir or Enametoolong or Eloop or Enxio or Enodev => new FileNotFoundException("Not a regular file.", path),
        Eacces or Eperm => new UnauthorizedAccessException($"Access to the path '{path}' is denied."),
        _ => new IOException($"{Marshal.GetPInvokeErrorMessage(errno)} : '{path}'", errno),
    };

    [LibraryImport("libc", EntryPoint = "openat", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    private static partial int OpenAt(int dirFd, string path, int flags, int mode);

    [LibraryImport("libc", EntryPoint = "fcntl", SetLastError = true)]
    private static partial int Fcntl(int fd, int command, int argument);
}
