namespace Microsoft.AspNetCore.Builder;

/// <summary>Settings of FastFiles' connection-level parts, passed to <c>KestrelServerOptions.UseFastFilesConnections</c>.</summary>
public sealed class FastFilesKestrelOptions
{
    /// <summary>
    /// The HTTP/2 TLS output stage, applied to every HTTPS endpoint from configuration (<c>Kestrel:Endpoints</c>) and
    /// to code-configured endpoints that call <c>UseHttp2TlsOutputStage()</c> after <c>UseHttps</c>.
    /// </summary>
    /// <remarks>Defaults to a new <see cref="Http2TlsOutputStageOptions"/> (mode <see cref="Http2TlsOutputStageMode.Http2Only"/>).</remarks>
    public Http2TlsOutputStageOptions Http2TlsOutputStage { get; } = new();

    /// <summary>
    /// Whether <c>KestrelServerOptions.UseFastFilesConnections</c> and <c>ListenOptions.UseFastFilesConnections</c> add the HTTP/2 TLS output
    /// stage. An explicit <c>UseHttp2TlsOutputStage()</c> always adds it.
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="false"/>: on this project's measurements (README, benchmarks/results/stage-onoff-2026-11-21)
    /// the stage gained 1.2x to 1.6x for one connection with 70 streams, was neutral on many connections and cost a few
    /// percent on single-stream HTTP/2, so it is opt-in.
    /// </remarks>
    public bool EnableHttp2TlsOutputStage { get; set; }

    /// <summary>
    /// Whether <c>KestrelServerOptions.UseFastFilesConnections</c> (for HTTPS endpoints from configuration) and
    /// <c>ListenOptions.UseFastFilesConnections</c> (after <c>UseHttps</c>) add TLS record coalescing: Kestrel's output is written
    /// to the connection's <c>SslStream</c> from 16 KiB blocks, so responses go out in full-size TLS records instead of
    /// one record per 4 KiB memory-pool block. Inline: no extra pipe, no thread hop, no allocation in steady state.
    /// An explicit <c>UseTlsRecordCoalescing()</c> always adds it.
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="true"/>: measured (benchmarks/results/tls-records-own-pool-2026-11-21, medians of 5
    /// rounds) at 1.31x on HTTP/1.1 over TLS with 64 KiB files, 1.25x on one HTTP/2 connection with 70 streams of
    /// 64 KiB, 1.08x on 16 HTTP/2 connections with a mixed set, and within noise where responses fit in one record,
    /// with the same allocations and working set as without it.
    /// </remarks>
    public bool EnableTlsRecordCoalescing { get; set; } = true;

    /// <summary>
    /// Whether endpoints from configuration, and code endpoints that call <c>listenOptions.UseFastFilesConnections()</c>, give each
    /// connection a cache of parsed request header values (see <c>UseRequestHeaderCache</c>). It is not consulted
    /// when string reuse is disabled.
    /// </summary>
    /// <remarks>Defaults to <see langword="true"/>.</remarks>
    public bool EnableRequestHeaderCache { get; set; } = true;

    /// <summary>
    /// How many of the process's file descriptors (RLIMIT_NOFILE) are kept free of connections on every endpoint with
    /// FastFiles' connection parts: a connection whose socket is one of the last <see cref="DescriptorReserve"/>
    /// descriptors is closed as it arrives (event 4010 once per burst, <c>fastfiles.connections.refused</c>), so files
    /// can still be opened and the .NET runtime can still start threads (at the limit it cannot, and aborts). Linux
    /// only; 0 turns the check off. At most half the limit in effect is held back, whatever the value (one meant for a
    /// machine with a higher limit must not refuse every connection), and at most half the room the limit leaves above
    /// the descriptors the process holds at rest, counted as endpoints are bound (event 4028 once when reduced).
    /// </summary>
    /// <remarks>
    /// Defaults to 64. On endpoints from configuration and from URLs the check comes before TLS, so a connection that
    /// never starts its handshake is closed too; on a code endpoint it runs where
    /// <c>listenOptions.UseFastFilesConnections()</c> is called, which after <c>UseHttps(...)</c> means once the
    /// handshake has completed (a silent connection holds its descriptor until Kestrel's handshake timeout). When
    /// <c>AddFastFiles()</c> finds Kestrel's socket transport registered, the check also runs in Kestrel's accept loop,
    /// before the next connection is accepted, so a burst of connections larger than the reserve cannot fill it.
    /// </remarks>
    public int DescriptorReserve { get; set; } = 64;

    /// <summary>
    /// Whether plaintext endpoints from configuration (<c>Kestrel:Endpoints</c>) and bound from URLs (<c>--urls</c>,
    /// <c>ASPNETCORE_URLS</c>, <c>UseUrls</c>; with <c>AddFastFiles()</c>, whose startup filter takes the addresses) get
    /// the zero-copy send path (file bodies sent with sendfile(2); see <c>ListenOptions.UseZeroCopySendFile</c>).
    /// Code-configured endpoints call <c>UseZeroCopySendFile()</c> themselves, first on the endpoint.
    /// </summary>
    /// <remarks>Defaults to <see langword="false"/>.</remarks>
    public bool EnableZeroCopySendFile { get; set; }

    /// <summary>Settings of the zero-copy send path, for configuration endpoints and for <c>UseZeroCopySendFile()</c> on code endpoints.</summary>
    /// <remarks>Defaults to a new <see cref="ZeroCopySendFileOptions"/>.</remarks>
    public ZeroCopySendFileOptions ZeroCopySendFile { get; } = new();

    /// <summary>
    /// Whether <c>KestrelServerOptions.UseFastFilesConnections</c> (for every endpoint from configuration or bound from
    /// URLs, after TLS on HTTPS ones; URLs need <c>AddFastFiles()</c>) and <c>ListenOptions.UseFastFilesConnections</c> add the HTTP/1.1 static lane with the application's
    /// <c>StaticLaneOptions</c> roots (<c>services.ConfigureStaticLane(...)</c>, the <c>FastFiles:StaticLane</c>
    /// configuration section): GET and HEAD for files under those roots are answered before Kestrel parses the request,
    /// and never reach the application's middleware (no authentication, no rewrites). An explicit <c>UseStaticLane()</c>
    /// always adds it.
    /// </summary>
    /// <remarks>Defaults to <see langword="false"/>: the lane serves only what it is explicitly given.</remarks>
    public bool EnableStaticLane { get; set; }
}
