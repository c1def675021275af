using System.Globalization;

namespace FastFiles.FunctionalTests.Infrastructure;

public static class ResponseHeaders
{
    /// <summary>The raw value of a response or content header (joined with ", "), or null when absent.</summary>
    public static string? Header(this HttpResponseMessage response, string name)
    {
        if (response.Headers.NonValidated.TryGetValues(name, out var values)
            || response.Content.Headers.NonValidated.TryGetValues(name, out values))
        {
            return string.Join(", ", values);
        }

        return null;
    }

    public static string HttpDate(DateTimeOffset date) => date.ToUniversalTime().ToString("r", CultureInfo.InvariantCulture);

    /// <summary>
    /// Asserts that no descriptor under <paramref name="root"/> is still open (bounded wait for in-flight closes). Call
    /// it after the host is disposed: the file cache keeps large files' descriptors open while the app runs.
    /// </summary>
    public static async Task AssertNoOpenFilesUnderAsync(string root)
        => Assert.Equal(0, await OpenFileDescriptors.WaitForNoneUnderAsync(root, TimeSpan.FromSeconds(10)));

    /// <summary>
    /// While the app runs: no file under <paramref name="root"/> is open more than once (the cache's one descriptor)
    /// and no deleted or replaced file is still open, once in-flight responses have closed theirs (bounded wait).
    /// </summary>
    public static async Task AssertAtMostCachedFilesOpenUnderAsync(string root)
    {
        DateTime deadline = DateTime.UtcNow + TimeSpan.FromSeconds(10);
        IReadOnlyList<string> targets;
        while (!IsCachedOnly(targets = OpenFileDescriptors.TargetsUnder(root)) && DateTime.UtcNow < deadline)
        {
            await Task.Delay(50);
        }

        Assert.True(IsCachedOnly(targets), "open: " + string.Join(", ", targets));

        static bool IsCachedOnly(IReadOnlyList<string> targets)
            => targets.Distinct(StringComparer.Ordinal).Count() == targets.Count && !targets.Any(t => t.EndsWith(" (deleted)", StringComparison.Ordinal));
    }
}
