using System.Collections.Concurrent;
using System.Reflection;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>Checks shared by the abort, reset and shutdown tests.</summary>
public static class LeakChecks
{
    /// <summary>
    /// Runs <paramref name="body"/>, then collects: a task that faulted unobserved in it (an abort path's exception
    /// nobody awaited) fails the test.
    /// </summary>
    public static async Task WithoutUnobservedExceptionsAsync(Func<Task> body)
    {
        int unobserved = 0;
        EventHandler<UnobservedTaskExceptionEventArgs> onUnobserved = (_, e) => Interlocked.Increment(ref unobserved);
        TaskScheduler.UnobservedTaskException += onUnobserved;
        try
        {
            await body();
            GC.Collect();
            GC.WaitForPendingFinalizers();
            GC.Collect();
            Assert.Equal(0, unobserved);
        }
        finally
        {
            TaskScheduler.UnobservedTaskException -= onUnobserved;
        }
    }

    /// <summary>No block is in the TLS writers' pool twice: one returned twice would be handed to two connections at once.</summary>
    public static void AssertTlsPoolHasNoDuplicates()
    {
        var blocks = (ConcurrentQueue<byte[]>)typeof(FastFiles.Connections.TlsRecordWriter.BlockPool)
            .GetField("Blocks", BindingFlags.NonPublic | BindingFlags.Static)!.GetValue(null)!;
        byte[][] all = blocks.ToArray();
        Assert.Equal(all.Length, all.Distinct(ReferenceEqualityComparer.Instance).Count());
    }
}
