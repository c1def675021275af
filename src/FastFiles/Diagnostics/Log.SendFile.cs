using Microsoft.Extensions.Logging;

namespace FastFiles.Diagnostics;

/// <summary>
/// FastFiles' log events, one partial file per area, with stable ids: 1xxx sending a file body (shared by every
/// feature that sends one), 2xxx static files, 3xxx results, 4xxx connections, 5xxx cache.
/// </summary>
internal static partial class Log
{
    [LoggerMessage(1001, LogLevel.Warning, "The file '{Path}' became shorter while sending {Count} bytes; the response was aborted.", EventName = "FileTruncated")]
    public static partial void FileTruncated(ILogger logger, string path, long count);

    [LoggerMessage(1002, LogLevel.Debug, "The client disconnected while the file '{Path}' was being sent.", EventName = "ClientDisconnected")]
    public static partial void ClientDisconnected(ILogger logger, string path);

    [LoggerMessage(1003, LogLevel.Information, "The file '{Path}' was written into while {Count} bytes of it were being sent; the response was aborted before its last bytes.", EventName = "FileRewritten")]
    public static partial void FileRewritten(ILogger logger, string path, long count);
}
