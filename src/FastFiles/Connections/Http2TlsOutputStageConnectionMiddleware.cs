using System.Buffers;
using System.IO.Pipelines;
using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.Extensions.Logging;

namespace FastFiles.Connections;

/// <summary>
/// Connection middleware placed after <c>UseHttps</c>: replaces the connection's output with a bounded pipe that is
/// drained into the TLS writer from the thread pool. Since .NET 7 Kestrel's HTTP/2 frame writer flushes straight into
/// the <c>SslStream</c> pipe writer, so every flush encrypts inline on the one writer loop of the connection
/// (aspnetcore #40925); with the stage that loop only copies into memory and encryption overlaps with framing.
/// Input passes through untouched.
/// </summary>
internal sealed class Http2TlsOutputStageConnectionMiddleware
{
    // The longest timeout Task.WaitAsync accepts.
    private static readonly TimeSpan LongestWait = TimeSpan.FromMilliseconds(uint.MaxValue - 1);

    private readonly ConnectionDelegate _next;
    private readonly Http2TlsOutputStageOptions _options;
    private readonly long _bound;
    private readonly MinDataRate? _minResponseDataRate;
    private readonly FastFilesMetrics _metrics;
    private readonly ILogger _logger;

    public Http2TlsOutputStageConnectionMiddleware(ConnectionDelegate next, Http2TlsOutputStageOptions options, KestrelServerLimits limits, FastFilesMetrics metrics, ILogger logger)
    {
        _metrics = metrics;
        _next = next;
        _options = options;
        _bound = options.ResolveBound(limits.MaxResponseBufferSize);
        _minResponseDataRate = limits.MinResponseDataRate;
        _logger = logger;
    }

    public Task OnConnectionAsync(ConnectionContext context)
    {
        Http2TlsOutputStageMode mode = _options.Mode;
        // Plaintext connections (and a disabled stage) are not decisions; TLS ones are counted either way.
        bool tls = mode != Http2TlsOutputStageMode.Disabled && context.Features.Get<ITlsConnectionFeature>() is not null;
        bool stage = tls && (mode == Http2TlsOutputStageMode.AllProtocols || NegotiatedHttp2(context));
        if (tls)
        {
            _metrics.StageDecided(stage);
        }

        if (!stage)
        {
            _options.Statistics.PassedThrough();
            return _next(context);
        }

        return StageAsync(context);
    }

    // ALPN is settled before HttpsConnectionMiddleware calls us, so the decision is per connection.
    private static bool NegotiatedHttp2(ConnectionContext context)
    {
        ReadOnlyMemory<byte> alpn = context.Features.Get<ITlsApplicationProtocolFeature>()?.ApplicationProtocol ?? default;
        return alpn.Span.SequenceEqual(SslApplicationProtocol.Http2.Protocol.Span);
    }

    private async Task StageAsync(ConnectionContext context)
    {
        IDuplexPipe tls = context.Transport;
        MemoryPool<byte> pool = context.Features.Get<IMemoryPoolFeature>()?.MemoryPool ?? MemoryPool<byte>.Shared;
        // An HTTP/1.x connection (AllProtocols) may have its client certificate asked for later (ClientCertificateMode
        // .DelayCertificate): that renegotiation writes to the SslStream the drain writes to, so the two take turns.
        ITlsConnectionFeature? tlsFeature = NegotiatedHttp2(context) ? null : context.Features.Get<ITlsConnectionFeature>();
        var connection = new OutputStageConnection(tls, pool, _bound, _options.Statistics, _metrics, _logger, context.ConnectionId, exclusiveTls: tlsFeature is not null);
        _options.Statistics.Staged();
        Log.OutputStaged(_logger, context.ConnectionId, _bound);

        Task drain = connection.StartDraining();
        context.Transport = connection;
        if (tlsFeature is not null)
        {
            context.Features.Set<ITlsConnectionFeature>(new StagedTlsConnectionFeature(tlsFeature, connection));
        }

        try
        {
            await _next(context);
        }
        finally
        {
            if (tlsFeature is not null)
            {
                context.Features.Set(tlsFeature);
            }

            // Kestrel has completed its writer by now; completing again is a no-op, and covers a next that threw early.
            connection.CompleteWriter();
            await connection.LingerAsync(WaitForDrainAsync(context, drain));
            connection.ReleaseBacklog();
            context.Transport = tls;
        }
    }

    // HttpsConnectionMiddleware disposes the SslStream as soon as we return, so the tail (final frames, GOAWAY) must be
    // written first. A peer that stopped reading could hold us forever, so we give the remaining bytes (at most one
    // bound) the time Kestrel's MinResponseDataRate would allow, then abort, which closes the socket and ends the drain.
    private async Task WaitForDrainAsync(ConnectionContext context, Task drain)
    {
        if (drain.IsCompleted || _minResponseDataRate is not { } rate)
        {
            await drain;
            return;
        }

        // In seconds as a double: a large bound at a low rate exceeds what a timer can wait (Task.WaitAsync throws past
        // about 49.7 days, TimeSpan past its range), and that wait is no limit in practice anyway.
        double seconds = rate.GracePeriod.TotalSeconds + (_bound / Math.Max(rate.BytesPerSecond, 1.0));
        TimeSpan timeout = seconds < LongestWait.TotalSeconds ? TimeSpan.FromSeconds(seconds) : LongestWait;
        try
        {
            await drain.WaitAsync(timeout);
        }
        catch (TimeoutException)
        {
            Log.DrainTimedOut(_logger, context.ConnectionId, timeout);
            _metrics.StageDrainTimedOut();
            context.Abort(new ConnectionAbortedException("The client did not read the end of the response in time."));
            await drain;
        }
    }

    /// <summary>The connection's TLS feature, with a delayed certificate negotiation taking its turn with the drain.</summary>
    private sealed class StagedTlsConnectionFeature(ITlsConnectionFeature inner, OutputStageConnection stage) : ITlsConnectionFeature
    {
        public X509Certificate2? ClientCertificate
        {
            get => inner.ClientCertificate;
            set => inner.ClientCertificate = value;
        }

        public Task<X509Certificate2?> GetClientCertificateAsync(CancellationToken cancellationToken)
            => inner.ClientCertificate is { } known
                ? Task.FromResult<X509Certificate2?>(known)
                : stage.TlsExclusiveAsync(inner.GetClientCertificateAsync, cancellationToken);
    }
}
