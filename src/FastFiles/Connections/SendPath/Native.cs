using System.Runtime.InteropServices;

namespace FastFiles.Connections.SendPath;

/// <summary>The few Linux calls the send path makes itself (glibc and musl both export them from libc).</summary>
internal static unsafe partial class Native
{
    public const int EAGAIN = 11;
    public const int EINTR = 4;

    public const int MSG_DONTWAIT = 0x40;
    public const int MSG_NOSIGNAL = 0x4000;
    public const int MSG_MORE = 0x8000;

    private const int F_GETFL = 3;
    private const int O_NONBLOCK = 0x800;

    [StructLayout(LayoutKind.Sequential)]
    public struct IoVector
    {
        public byte* Base;
        public nuint Length;
    }

    [StructLayout(LayoutKind.Sequential)]
    public struct MessageHeader
    {
        public void* Name;
        public uint NameLength;
        public IoVector* Vectors;
        public nuint VectorCount;
        public void* Control;
        public nuint ControlLength;
        public int Flags;
    }

    /// <summary>Linux x64/arm64 with a 64-bit off_t: sendfile(2) with an explicit offset (the descriptor's own position is untouched).</summary>
    [LibraryImport("libc", EntryPoint = "sendfile", SetLastError = true)]
    public static partial nint SendFile(int outFd, int inFd, long* offset, nuint count);

    [LibraryImport("libc", EntryPoint = "sendmsg", SetLastError = true)]
    public static partial nint SendMessage(int fd, MessageHeader* message, int flags);

    [LibraryImport("libc", EntryPoint = "fcntl", SetLastError = true)]
    private static partial int Fcntl(int fd, int command, int argument);

    /// <summary>Whether sendfile/sendmsg on the descriptor return EAGAIN instead of blocking a thread.</summary>
    public static bool IsNonBlocking(int fd)
    {
        int flags = Fcntl(fd, F_GETFL, 0);
        return flags >= 0 && (flags & O_NONBLOCK) != 0;
    }

    /// <summary>Whether this process can use the send path at all: 64-bit Linux, where the declarations above hold.</summary>
    public static bool IsSupported { get; } = OperatingSystem.IsLinux() && Environment.Is64BitProcess
        && RuntimeInformation.ProcessArchitecture is Architecture.X64 or Architecture.Arm64;
}
