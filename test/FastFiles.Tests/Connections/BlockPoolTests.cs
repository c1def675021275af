using FastFiles.Connections.SendPath;

namespace FastFiles.Tests.Connections;

/// <summary>
/// The send path's block pool. A body writer that asks for up to 64 KiB at once (FastFiles' copy path) must get a
/// pooled 64 KiB block: an array sized to each request could never be pooled, and allocating one per write cost 265 KB
/// per 1 MiB multi-range response.
/// </summary>
public sealed class BlockPoolTests
{
    [Theory]
    [InlineData(BlockPool.BlockSize + 1)]
    [InlineData(20_000)]
    [InlineData(BlockPool.LargeBlockSize)]
    public void Requests_up_to_64_KiB_get_a_poolable_64_KiB_block(int size)
    {
        byte[] block = BlockPool.RentLarge(size);
        try
        {
            Assert.Equal(BlockPool.LargeBlockSize, block.Length);
        }
        finally
        {
            BlockPool.Return(block);
        }
    }

    [Fact]
    public void Requests_over_64_KiB_get_an_array_of_their_own_size()
    {
        byte[] block = BlockPool.RentLarge(BlockPool.LargeBlockSize + 1);
        try
        {
            Assert.Equal(BlockPool.LargeBlockSize + 1, block.Length);
        }
        finally
        {
            BlockPool.Return(block);
        }
    }

    [Fact]
    public void A_returned_block_is_rented_again_and_the_pool_keeps_at_most_its_bound()
    {
        var pool = new BlockPool.Pool(1024, maxRetained: 2);
        byte[] a = pool.Rent();
        byte[] b = pool.Rent();
        byte[] c = pool.Rent();
        Assert.Equal(1024, a.Length);
        pool.Return(a);
        pool.Return(b);
        pool.Return(c);

        // a and b were kept, c went to the GC.
        Assert.Same(a, pool.Rent());
        Assert.Same(b, pool.Rent());
        byte[] fresh = pool.Rent();
        Assert.NotSame(a, fresh);
        Assert.NotSame(b, fresh);
        Assert.NotSame(c, fresh);
    }
}
