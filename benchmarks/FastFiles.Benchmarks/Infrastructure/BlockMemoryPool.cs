using System.Buffers;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;

namespace FastFiles.Benchmarks.Infrastructure;

/// <summary>
/// A memory pool that, like Kestrel's pinned block pool, only ever hands out 4 KiB blocks. A <c>Pipe</c> built on
/// it takes blocks from here for <c>GetMemory(n)</c> with n up to 4096 and falls back to <c>ArrayPool</c> above,
/// which is the behaviour the body-copy suite is about.
/// </summary>
internal sealed class BlockMemoryPool : MemoryPool<byte>
{
    public const int BlockSize = 4096;

    private readonly ConcurrentQueue<Block> _blocks = new();

    public override int MaxBufferSize => BlockSize;

    public override IMemoryOwner<byte> Rent(int minBufferSize = -1)
    {
        if (minBufferSize > BlockSize)
        {
            throw new ArgumentOutOfRangeException(nameof(minBufferSize), "Blocks are 4 KiB.");
        }

        return _blocks.TryDequeue(out Block? block) ? block : new Block(this);
    }

    protected override void Dispose(bool disposing)
    {
    }

    private sealed class Block(BlockMemoryPool pool) : IMemoryOwner<byte>
    {
        // Pinned like Kestrel's slabs, so the comparison includes no pinning cost the server would not pay.
        private readonly byte[] _array = GC.AllocateUninitializedArray<byte>(BlockSize, pinned: true);

        public Memory<byte> Memory => MemoryMarshal.CreateFromPinnedArray(_array, 0, _array.Length);

        public void Dispose() => pool._blocks.Enqueue(this);
    }
}
