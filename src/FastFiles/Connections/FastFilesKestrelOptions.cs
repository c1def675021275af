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

    /// <summary>
    /// Whether <c>KestrelServerOptions.UseFastFiles</c> and <c>ListenOptions.UseFastFiles</c> add the HTTP/2 TLS output
    /// stage. An explicit <c>UseHttp2TlsOutputStage()</c> always adds it.
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="false"/>: on this project's measurements (README, benchmarks/results/full-2026-11-21) the
    /// stage was neutral for one connection with many streams and cost 6-7% on single-stream HTTP/2, so it is opt-in.
    /// </remarks>
    public bool EnableHttp2TlsOutputStage { get; set; }

    /// <summary>
    /// Whether endpoints from configuration, and code endpoints that call <c>listenOptions.UseFastFiles()</c>, give each
    /// connection a cache of parsed request header values (see <c>UseFastFilesHeaderCache</c>). It is not consulted
    /// when string reuse is disabled.
    /// </summary>
    /// <remarks>Defaults to <see langword="true"/>.</remarks>
    public bool EnableRequestHeaderCache { get; set; } = true;
}
