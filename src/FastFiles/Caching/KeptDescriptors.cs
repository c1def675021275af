using FastFiles.Files;

namespace FastFiles.Caching;

/// <summary>
/// The process's budget for descriptors file caches keep open across requests: a quarter of RLIMIT_NOFILE, over every
/// cache (<c>MaxOpenFiles</c>, 1024 by default, applies per root on top). Without it, a site with many files above the
/// cached size kept up to 1024 descriptors per root: with a hard limit of 1024 (<c>ulimit -n 1024</c>,
/// <c>LimitNOFILE=1024</c>, <c>docker --ulimit nofile=1024:1024</c>) about 800 such files left no descriptor for sockets,
/// and the runtime aborted the process. The other three quarters stay for connections, files opened per request and the
/// runtime's own.
/// </summary>
internal static class KeptDescriptors
{
    private static int s_kept;

    /// <summary>Descriptors kept now, in every cache of the process.</summary>
    public static int Kept => Volatile.Read(ref s_kept);

    /// <summary>The budget: a quarter of the soft limit, read when asked (it may be raised while the process runs); unlimited where unknown.</summary>
    public static long Budget => DescriptorExhaustion.ProcessLimit() is long limit and > 0 ? limit / 4 : long.MaxValue;

    /// <summary>Takes one place in the budget; false when it is spent.</summary>
    public static bool TryTake()
    {
        if (Interlocked.Increment(ref s_kept) <= Budget)
        {
            return true;
        }

        Interlocked.Decrement(ref s_kept);
        return false;
    }

    /// <summary>Gives back a place taken by <see cref="TryTake"/>, once its descriptor is retired.</summary>
    public static void Give() => Interlocked.Decrement(ref s_kept);
}
