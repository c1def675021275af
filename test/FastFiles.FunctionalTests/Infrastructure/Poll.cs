namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>Waiting for a value another thread sets (a metric, a pool count, bytes on a socket), never for a time.</summary>
public static class Poll
{
    /// <summary>Polls (bounded, 30 s) until <paramref name="read"/> returns <paramref name="expected"/> (or more, for counters); returns the last value.</summary>
    public static async Task<long> UntilAsync(Func<long> read, long expected)
    {
        DateTime deadline = DateTime.UtcNow + TimeSpan.FromSeconds(30);
        long value;
        while ((value = read()) != expected && DateTime.UtcNow < deadline)
        {
            if (expected > 0 && value > expected)
            {
                break;
            }

            await Task.Delay(10);
        }

        return value;
    }

    /// <summary>
    /// Calls <paramref name="get"/> (bounded, <paramref name="within"/>) until <paramref name="done"/> holds for its result,
    /// then returns that result; past the bound, returns the last result for the caller's assertions to report.
    /// </summary>
    public static async Task<T> EventuallyAsync<T>(Func<Task<T>> get, Func<T, bool> done, TimeSpan within)
    {
        DateTime deadline = DateTime.UtcNow + within;
        while (true)
        {
            T result = await get();
            if (done(result) || DateTime.UtcNow > deadline)
            {
                return result;
            }

            await Task.Delay(20);
        }
    }
}
