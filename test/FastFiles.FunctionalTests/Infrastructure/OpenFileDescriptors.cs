namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>Counts this process's open descriptors that point into a directory, from <c>/proc/self/fd</c>.</summary>
public static class OpenFileDescriptors
{
    public static int CountUnder(string directory) => TargetsUnder(directory).Count;

    /// <summary>Where each of this process's descriptors under <paramref name="directory"/> points (deleted files end in <c> (deleted)</c>).</summary>
    public static IReadOnlyList<string> TargetsUnder(string directory)
    {
        var targets = new List<string>();
        foreach (string fd in Directory.EnumerateFileSystemEntries("/proc/self/fd"))
        {
            try
            {
                string? target = new FileInfo(fd).LinkTarget;
                if (target is not null && target.StartsWith(directory, StringComparison.Ordinal))
                {
                    targets.Add(target);
                }
            }
            catch (IOException)
            {
                // The descriptor closed while we looked.
            }
        }

        return targets;
    }

    /// <summary>Waits (bounded, 30 s) for no descriptor under <paramref name="directory"/>; fails naming those still open.</summary>
    public static async Task AssertNoneUnderAsync(string directory)
    {
        int left = await WaitForNoneUnderAsync(directory, TimeSpan.FromSeconds(30));
        Assert.True(left == 0, $"{left} descriptors under {directory} still open: {string.Join(", ", TargetsUnder(directory).Take(3))}");
    }

    /// <summary>Waits (bounded) for descriptors under <paramref name="directory"/> to drop to zero; returns the last count.</summary>
    public static async Task<int> WaitForNoneUnderAsync(string directory, TimeSpan timeout)
    {
        DateTime deadline = DateTime.UtcNow + timeout;
        int count;
        while ((count = CountUnder(directory)) > 0 && DateTime.UtcNow < deadline)
        {
            await Task.Delay(50);
        }

        return count;
    }
}
