using Microsoft.Extensions.Logging;

namespace FastFiles.Diagnostics;

internal static partial class Log
{
    [LoggerMessage(3001, LogLevel.Debug, "The file '{Path}' does not exist or cannot be opened; sending 404.", EventName = "FileNotFound")]
    public static partial void FileNotFound(ILogger logger, string path);
}
