using Microsoft.Extensions.Logging;

namespace FastFiles.Diagnostics;

internal static partial class Log
{
    [LoggerMessage(4001, LogLevel.Debug, "Connection {ConnectionId}: output staged ahead of TLS (bound {Bound} bytes).", EventName = "OutputStaged")]
    public static partial void OutputStaged(ILogger logger, string connectionId, long bound);

    [LoggerMessage(4002, LogLevel.Debug, "Connection {ConnectionId}: writing to TLS failed; the stage reports the failure to Kestrel.", EventName = "TlsWriteFailed")]
    public static partial void TlsWriteFailed(ILogger logger, string connectionId, Exception exception);

    [LoggerMessage(4003, LogLevel.Debug, "Connection {ConnectionId}: the stage did not drain within {Timeout} after Kestrel finished; aborting the connection.", EventName = "DrainTimedOut")]
    public static partial void DrainTimedOut(ILogger logger, string connectionId, TimeSpan timeout);

    [LoggerMessage(4005, LogLevel.Debug, "Endpoint '{EndpointName}' from configuration: TLS applied by FastFiles with its connection parts behind it ({Parts}).", EventName = "ConfigurationEndpointStaged")]
    public static partial void ConfigurationEndpointStaged(ILogger logger, string endpointName, string parts);

    [LoggerMessage(4010, LogLevel.Warning, "Connection refused: its socket is descriptor {Descriptor} of {Limit} (RLIMIT_NOFILE), within the last {Reserve} kept free for files and thread starts; {Suppressed} more such connections since the last warning. Raise the descriptor limit (ulimit -n, LimitNOFILE) or limit connections (KestrelServerLimits.MaxConcurrentConnections).", EventName = "DescriptorReserveReached")]
    public static partial void DescriptorReserveReached(ILogger logger, long descriptor, long limit, long reserve, long suppressed);

    [LoggerMessage(4028, LogLevel.Warning, "The descriptor reserve of {Reserve} is reduced to {Effective}: the descriptor limit {Limit} (RLIMIT_NOFILE) leaves little room above the {InUse} descriptors the process held at rest (the fewest counted as endpoints were bound). Raise the limit (ulimit -n, LimitNOFILE).", EventName = "DescriptorReserveReduced")]
    public static partial void DescriptorReserveReduced(ILogger logger, int reserve, long effective, long limit, long inUse);

    [LoggerMessage(4023, LogLevel.Warning, "The descriptor reserve check for an accepted connection failed; the connection was let through.", EventName = "DescriptorReserveCheckFailed")]
    public static partial void DescriptorReserveCheckFailed(ILogger logger, Exception exception);

    [LoggerMessage(4024, LogLevel.Debug, "Disposing a connection refused for the descriptor reserve failed.", EventName = "RefusedConnectionDisposeFailed")]
    public static partial void RefusedConnectionDisposeFailed(ILogger logger, Exception exception);

    [LoggerMessage(4007, LogLevel.Debug, "Connection {ConnectionId}: a file body of {Length} bytes is copied instead of sent with sendfile: {Reason}.", EventName = "SendPathFallback")]
    public static partial void SendPathFallback(ILogger logger, string connectionId, string reason, long length);

    [LoggerMessage(4027, LogLevel.Warning, "sendfile(2) is refused in this process (errno {Errno}: a seccomp profile?); file bodies on the zero-copy send path are copied from now on.", EventName = "SendFileRefused")]
    public static partial void SendFileRefused(ILogger logger, int errno);

    [LoggerMessage(4008, LogLevel.Debug, "Connection {ConnectionId}: the send path stopped sending ({Reason}); the connection is aborted.", EventName = "SendPathSendFailed")]
    public static partial void SendPathSendFailed(ILogger logger, string connectionId, string reason);

    [LoggerMessage(4009, LogLevel.Information, "Connection {ConnectionId}: the client read a file body more slowly than the response's minimum data rate; the connection is aborted.", EventName = "SendPathDataRateTooLow")]
    public static partial void SendPathDataRateTooLow(ILogger logger, string connectionId);

    [LoggerMessage(4020, LogLevel.Debug, "Connection {ConnectionId}: the static lane handed the connection to Kestrel ({Reason}).", EventName = "LaneHandedOff")]
    public static partial void LaneHandedOff(ILogger logger, string connectionId, string reason);

    [LoggerMessage(4021, LogLevel.Debug, "Connection {ConnectionId}: the client went away while the static lane held the connection.", EventName = "LaneConnectionEnded")]
    public static partial void LaneConnectionEnded(ILogger logger, string connectionId, Exception exception);

    [LoggerMessage(4022, LogLevel.Debug, "Endpoint {Endpoint}: static lane on for {RootCount} root(s).", EventName = "LaneEnabled")]
    public static partial void LaneEnabled(ILogger logger, string endpoint, int rootCount);

    [LoggerMessage(4026, LogLevel.Debug, "Connection {ConnectionId}: after requests the static lane answered, the client sent the HTTP/2 preface; answered 505 and closed, as Kestrel does.", EventName = "LaneAnsweredHttp2Preface")]
    public static partial void LaneAnsweredHttp2Preface(ILogger logger, string connectionId);

    [LoggerMessage(4025, LogLevel.Warning, "Endpoint {Endpoint}: static lane off, because the endpoint also serves HTTP/3 and Kestrel announces it (Alt-Svc) on every HTTP/1.1 response, which lane responses do not carry. Set ListenOptions.DisableAltSvcHeader, or serve HTTP/3 from another endpoint, to have the lane.", EventName = "LaneOffForAltSvc")]
    public static partial void LaneOffForAltSvc(ILogger logger, string endpoint);
}
