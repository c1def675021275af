using Microsoft.Extensions.Logging;

namespace FastFiles.Diagnostics;

internal static partial class Log
{
    [LoggerMessage(5001, LogLevel.Debug, "Evicted {Count} cache entries; {Entries} entries and {Bytes} content bytes remain.", EventName = "CacheEvicted")]
    public static partial void Evicted(ILogger logger, int count, int entries, long bytes);

    [LoggerMessage(5008, LogLevel.Warning, "Looking for changed files among cached entries holding descriptors failed.", EventName = "DescriptorSweepFailed")]
    public static partial void DescriptorSweepFailed(ILogger logger, Exception exception);

    [LoggerMessage(5002, LogLevel.Warning, "File change notifications failed; the cache was cleared.", EventName = "WatcherError")]
    public static partial void WatcherError(ILogger logger, Exception exception);

    [LoggerMessage(5009, LogLevel.Warning, "File change notifications for part of {Root} failed (often the inotify watch limit, fs.inotify.max_user_watches); changes there are seen by periodic revalidation. Logged once.", EventName = "WatcherPartlyUnavailable")]
    public static partial void WatcherPartlyUnavailable(ILogger logger, string root, Exception exception);

    [LoggerMessage(5003, LogLevel.Warning, "File change notifications are unavailable for {Root}; cached entries rely on periodic revalidation.", EventName = "WatcherUnavailable")]
    public static partial void WatcherUnavailable(ILogger logger, string root, Exception exception);

    [LoggerMessage(5004, LogLevel.Debug, "Compressed {File} with {Coding}: {Length} -> {CompressedLength} bytes in {Milliseconds:0.0} ms.", EventName = "VariantCompressed")]
    public static partial void VariantCompressed(ILogger logger, string file, string coding, long length, long compressedLength, double milliseconds);

    [LoggerMessage(5005, LogLevel.Debug, "No {Coding} variant of {File} kept: {Reason}.", EventName = "VariantDiscarded")]
    public static partial void VariantDiscarded(ILogger logger, string file, string coding, string reason);

    [LoggerMessage(5006, LogLevel.Debug, "The compression queue is full; {File} is sent uncompressed until a later request queues it.", EventName = "CompressionQueueFull")]
    public static partial void CompressionQueueFull(ILogger logger, string file);

    [LoggerMessage(5007, LogLevel.Warning, "Compressing {File} failed; this version is sent uncompressed.", EventName = "CompressionFailed")]
    public static partial void CompressionFailed(ILogger logger, string file, Exception exception);
}
