using FastFiles.Diagnostics;

namespace Microsoft.AspNetCore.Builder;

/// <summary>
/// Settings of the HTTP/2 TLS output stage: a connection middleware that sits on the plaintext side of TLS, gives
/// Kestrel's HTTP layer its own bounded output pipe and encrypts from that pipe on the thread pool, so HTTP/2 frame
/// writing never waits on encryption.
/// </summary>
public sealed class Http2TlsOutputStageOptions
{
    /// <summary>The bound used when both <see cref="MaxBufferSize"/> and Kestrel's <c>MaxResponseBufferSize</c> are <see langword="null"/>: 1 MiB.</summary>
    public const long UnboundedFallbackBufferSize = 1024 * 1024;

    /// <summary>Which connections are staged.</summary>
    /// <remarks>Defaults to <see cref="Http2TlsOutputStageMode.Http2Only"/>.</remarks>
    public Http2TlsOutputStageMode Mode { get; set; } = Http2TlsOutputStageMode.Http2Only;

    /// <summary>
    /// The most bytes the stage holds for one connection before Kestrel's next flush waits (the stage pipe's pause
    /// threshold); it resumes below half of it. Kestrel may write one batch of frames past the bound before that flush, and
    /// the 16 KiB span being encrypted is counted in the pipe until TLS has taken it (one span besides, in the TLS writer).
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="null"/>: use <c>KestrelServerLimits.MaxResponseBufferSize</c> (64 KiB by default),
    /// or <see cref="UnboundedFallbackBufferSize"/> when that limit is <see langword="null"/> (unbounded), because the
    /// stage never buffers without a bound; Kestrel's 0 (no buffering) becomes 1 byte. Values below 1 set here are rejected
    /// when the endpoint starts.
    /// </remarks>
    public long? MaxBufferSize { get; set; }

    // Test and diagnostics hook: shared by every connection staged with these options.
    internal Http2TlsOutputStageStatistics Statistics { get; } = new();

    internal long ResolveBound(long? kestrelMaxResponseBufferSize)
    {
        if (MaxBufferSize is { } bound)
        {
            if (bound < 1)
            {
                throw new InvalidOperationException($"{nameof(Http2TlsOutputStageOptions)}.{nameof(MaxBufferSize)} must be at least 1; it is {bound}.");
            }

            return bound;
        }

        // Kestrel's 0 means "buffer nothing": every flush waits for its bytes to be written. The stage's nearest bound is
        // one byte (a pause threshold of 0 would mean never pausing).
        return Math.Max(kestrelMaxResponseBufferSize ?? UnboundedFallbackBufferSize, 1);
    }
}
