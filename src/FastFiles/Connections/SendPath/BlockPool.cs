using System.Collections.Concurrent;

namespace FastFiles.Connections.SendPath;

/// <summary>
/// The send path's output blocks: 16 KiB, pinned (their addresses go to sendmsg(2) without a fixed statement), shared
/// by all connections. At most <see cref="MaxRetained"/> (16 MiB) are kept; beyond that returned blocks go to the GC.
/// Rentals and returns are counted so tests can prove that no connection ending keeps a block.
/// </summary>
internal static class BlockPool
{
    public const int BlockSize = 16 * 1024;
    public const int MaxRetained = 1024;

    private static readonly ConcurrentQueue<byte[]> Blocks = new();
    private static int s_retained;
    private static long s_rented;
    private static long s_returned;

    /// <summary>Blocks rented and not yet returned, over the whole process.</summary>
    public static long Outstanding => Interlocked.Read(ref s_rented) - Interlocked.Read(ref s_returned);

    public static byte[] Rent()
    {
        Interlocked.Increment(ref s_rented);
        if (Blocks.TryDequeue(out byte[]? block))
        {
            Interlocked.Decrement(ref s_retained);
            return block;
        }

        return GC.AllocateUninitializedArray<byte>(BlockSize, pinned: true);
    }

    /// <summary>A buffer for a request larger than a block (rare: Kestrel writes in smaller pieces); counted like a block.</summary>
    public static byte[] RentLarge(int size)
    {
        Interlocked.Increment(ref s_rented);
        return GC.AllocateUninitializedArray<byte>(size, pinned: true);
    }

    public static void Return(byte[] block)
    {
        Interlocked.Increment(ref s_returned);
        if (block.Length != BlockSize)
        {
            return;
        }

        if (Interlocked.Increment(ref s_retained) <= MaxRetained)
        {
            Blocks.Enqueue(block);
        }
        else
        {
            Interlocked.Decrement(ref s_retained);
        }
    }
}
