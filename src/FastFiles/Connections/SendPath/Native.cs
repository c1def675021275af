using System.Runtime.InteropServices;

namespace FastFiles.Connections.SendPath;

/// <summary>The few Linux calls the send path makes itself (glibc and musl both export them from libc).</summary>
internal static unsafe partial class Native
{
    public const int EAGAIN = 11;
    public const int EINTR = 4;
    public const int EPERM = 1;
    public const int EINVAL = 22;
    public const int ENOSYS = 38;
    public const int EOPNOTSUPP = 95;
    public const int EPIPE = 32;
    public const int ECONNRESET = 104;

    public const int MSG_DONTWAIT = 0x40;
    public const int MSG_NOSIGNAL = 0x4000;
    public const int MSG_MORE = 0x8000;

    private const int F_GETFL = 3;
    private const int O_NONBLOCK = 0x800;

    /// <summary>
    /// A failed send's errno as the runtime's sockets report it: a reset is <see cref="System.Net.Sockets.SocketError.ConnectionReset"/>
    /// or <see cref="System.Net.Sockets.SocketError.Shutdown"/> (EPIPE), as Kestrel's transport tells resets from other errors.
    /// </summary>
    public static System.Net.Sockets.SocketException SendError(int errno) => errno switch
    {
        ECONNRESET => new System.Net.Sockets.SocketException((int)System.Net.Sockets.SocketError.ConnectionReset),
        EPIPE => new System.Net.Sockets.SocketException((int)System.Net.Sockets.SocketError.Shutdown),
        _ => new System.Net.Sockets.SocketException(errno),
    };

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

    private const int IPPROTO_TCP = 6;
    private const int TCP_INFO = 11;

    // struct tcp_info (linux/tcp.h): tcpi_bytes_acked, a __u64 at this offset since Linux 4.1.
    private const int BytesAckedOffset = 120;

    [LibraryImport("libc", EntryPoint = "getsockopt", SetLastError = true)]
    private static partial int GetSocketOption(int fd, int level, int name, byte* value, uint* length);

    /// <summary>Bytes of this connection the peer has acknowledged (tcpi_bytes_acked), or -1 when the kernel does not say.</summary>
    public static long BytesAcked(int fd)
    {
        byte* info = stackalloc byte[256];
        uint length = 256;
        if (GetSocketOption(fd, IPPROTO_TCP, TCP_INFO, info, &length) != 0 || length < BytesAckedOffset + sizeof(ulong))
        {
            return -1;
        }

        return (long)*(ulong*)(info + BytesAckedOffset);
    }

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
