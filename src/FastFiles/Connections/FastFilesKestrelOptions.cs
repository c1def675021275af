namespace FastFiles.Connections;

/// <summary>Settings of FastFiles' connection-level parts, passed to <c>KestrelServerOptions.UseFastFiles</c>.</summary>
public sealed class FastFilesKestrelOptions
{
    /// <summary>
    /// The HTTP/2 TLS output stage, applied to every HTTPS endpoint from configuration (<c>Kestrel:Endpoints</c>) and
    /// to code-configured endpoints that call <c>UseHttp2TlsOutputStage()</c> after <c>UseHttps</c>.
    /// </summary>
    /// <remarks>Defaults to a new <see cref="Http2TlsOutputStageOptions"/> (mode <see cref="Http2TlsOutputStageMode.Http2Only"/>).</remarks>
    public Http2TlsOutputStageOptions Http2TlsOutputStage { get; } = new();
}
