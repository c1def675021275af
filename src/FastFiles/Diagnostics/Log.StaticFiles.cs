using Microsoft.Extensions.Logging;

namespace FastFiles.Diagnostics;

internal static partial class Log
{
    [LoggerMessage(2001, LogLevel.Debug, "Sent {Path} with status {StatusCode} ({Length} body bytes).", EventName = "FileServed")]
    public static partial void Served(ILogger logger, string path, int statusCode, long length);

    [LoggerMessage(2002, LogLevel.Debug, "{Path} was not modified.", EventName = "FileNotModified")]
    public static partial void NotModified(ILogger logger, string path);

    [LoggerMessage(2003, LogLevel.Debug, "Precondition for {Path} failed.", EventName = "PreconditionFailed")]
    public static partial void PreconditionFailed(ILogger logger, string path);

    [LoggerMessage(2004, LogLevel.Debug, "Range for {Path} is not satisfiable.", EventName = "RangeNotSatisfiable")]
    public static partial void RangeNotSatisfiable(ILogger logger, string path);

    // 2005 and 2006 were FileTruncated and ClientDisconnected; they are 1001 and 1002 now, for every sender.

    [LoggerMessage(2007, LogLevel.Debug, "{Path} is not served: the path is unsafe or names a dotfile.", EventName = "PathRejected")]
    public static partial void PathRejected(ILogger logger, string path);

    [LoggerMessage(2008, LogLevel.Debug, "{Path} has no known content type.", EventName = "UnknownContentType")]
    public static partial void UnknownContentType(ILogger logger, string path);

    [LoggerMessage(2009, LogLevel.Debug, "A request for {Path} named a stale content hash; redirected to the current one.", EventName = "StaleFingerprint")]
    public static partial void StaleFingerprint(ILogger logger, string path);

    [LoggerMessage(2010, LogLevel.Warning, "Out of file descriptors opening {Path} ({Reason}): answering 503 with Retry-After until descriptors are free; {Suppressed} more such requests since the last warning. Raise the descriptor limit (ulimit -n, LimitNOFILE) or limit connections (KestrelServerLimits.MaxConcurrentConnections).", EventName = "DescriptorsExhausted")]
    public static partial void DescriptorsExhausted(ILogger logger, string path, long suppressed, string reason);

    [LoggerMessage(2011, LogLevel.Debug, "Out of file descriptors opening {Path}: 503.", EventName = "DescriptorsExhaustedAgain")]
    public static partial void DescriptorsExhaustedAgain(ILogger logger, string path);

    [LoggerMessage(2012, LogLevel.Warning, "The web root '{WebRootPath}' was not found: UseFastFiles without a FileProvider serves no files.", EventName = "WebRootNotFound")]
    public static partial void WebRootNotFound(ILogger logger, string? webRootPath);
}
