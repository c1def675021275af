using System.Collections.Concurrent;

namespace FastFiles.Connections.SendPath;

/// <summary>
/// The send path's output blocks, pinned (their addresses go to sendmsg(2) without a fixed statement) and shared by all
/// connections, in two sizes: 16 KiB for Kestrel's own writes, and 64 KiB for a body writer that asks for that much at
/// once (FastFiles' copy path reads up to 64 KiB per call). Each size keeps at most 16 MiB; beyond that returned blocks
/// go to the GC. Rentals and returns are counted so tests can prove that no connection ending keeps a block.
/// </summary>
internal static class BlockPool
{
    public const int BlockSize = 16 * 1024;
    public const int MaxRetained = 1024;

    /// <summary>
    /// The larger size. Without it every 64 KiB request allocated a pinned array: 265 KB per 1 MiB four-range response
    /// and, with inline sockets, 0.24x the copy path's throughput there (benchmarks/results/large-blocks-2026-11-26).
    /// </summary>
    public const int LargeBlockSize = 64 * 1024;
    public const int MaxLargeRetained = 256;

    private static readonly Pool Small = new(BlockSize, MaxRetained);
    private static readonly Pool Large = new(LargeBlockSize, MaxLargeRetained);
    private static long s_rented;
    private static long s_returned;

    /// <summary>Blocks rented and not yet returned, over the whole process.</summary>
    public static long Outstanding => Interlocked.Read(ref s_rented) - Interlocked.Read(ref s_returned);

    public static byte[] Rent()
    {
        Interlocked.Increment(ref s_rented);
        return Small.Rent();
    }

    /// <summary>A buffer for a request larger than a block: a pooled 64 KiB block up to that size, else an array of its own.</summary>
    public static byte[] RentLarge(int size)
    {
        Interlocked.Increment(ref s_rented);
        return size <= LargeBlockSize ? Large.Rent() : GC.AllocateUninitializedArray<byte>(size, pinned: true);
    }

    public static void Return(byte[] block)
    {
        Interlocked.Increment(ref s_returned);
        if (block.Length == BlockSize)
        {
            Small.Return(block);
        }
        else if (block.Length == LargeBlockSize)
        {
            Large.Return(block);
        }
    }

    /// <summary>One size of pinned blocks, keeping at most <c>maxRetained</c> of them for reuse.</summary>
    internal sealed class Pool(int size, int maxRetained)
    {
        private readonly ConcurrentQueue<byte[]> _blocks = new();
        private int _retained;

        public byte[] Rent()
        {
            if (_blocks.TryDequeue(out byte[]? block))
            {
                Interlocked.Decrement(ref _retained);
                return block;
            }

            return GC.AllocateUninitializedArray<byte>(size, pinned: true);
        }

        public void Return(byte[] block)
        {
            if (Interlocked.Increment(ref _retained) <= maxRetained)
            {
                _blocks.Enqueue(block);
            }
            else
            {
                Interlocked.Decrement(ref _retained);
            }
        }
    }
}
