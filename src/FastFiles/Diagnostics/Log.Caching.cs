using Microsoft.Extensions.Logging;

namespace FastFiles.Diagnostics;

internal static partial class Log
{
    [LoggerMessage(5001, LogLevel.Debug, "Evicted {Count} cache entries; {Entries} entries and {Bytes} content bytes remain.", EventName = "CacheEvicted")]
    public static partial void Evicted(ILogger logger, int count, int entries, long bytes);

    [LoggerMessage(5002, LogLevel.Warning, "File change notifications failed; the cache was cleared.", EventName = "WatcherError")]
    public static partial void WatcherError(ILogger logger, Exception exception);

    [LoggerMessage(5003, LogLevel.Warning, "File change notifications are unavailable for {Root}; cached entries rely on periodic revalidation.", EventName = "WatcherUnavailable")]
    public static partial void WatcherUnavailable(ILogger logger, string root, Exception exception);
}
