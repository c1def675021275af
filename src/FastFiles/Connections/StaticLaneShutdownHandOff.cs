using System.IO.Pipelines;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;

namespace FastFiles.Connections;

/// <summary>
/// Hands Kestrel a request that was under way when graceful shutdown began, so that Kestrel answers it (with
/// Connection: close) as it answers a request it has begun to read itself. Kestrel registers on
/// <see cref="IConnectionLifetimeNotificationFeature.ConnectionClosedRequested"/> before its first read; a token already
/// cancelled stops its request loop before it reads anything, and the request would be dropped. So Kestrel is shown a
/// token of ours, cancelled once it has parsed the first bytes it was handed (its first advance of the input), when the
/// request is under way for it too. Installed only for a hand-off after shutdown was requested; at any other time
/// Kestrel gets the connection's own feature and transport.
/// </summary>
internal sealed class StaticLaneShutdownHandOff : PipeReader, IConnectionLifetimeNotificationFeature, IDuplexPipe, IDisposable
{
    private readonly IDuplexPipe _transport;
    private readonly PipeReader _input;
    private readonly PipeWriter _output;
    private readonly IConnectionLifetimeNotificationFeature? _lifetime;
    private readonly CancellationTokenSource _closeRequested = new();
    private int _released;

    private StaticLaneShutdownHandOff(IDuplexPipe transport, IConnectionLifetimeNotificationFeature? lifetime)
    {
        _transport = transport;
        _input = transport.Input;
        _output = transport.Output;
        _lifetime = lifetime;
    }

    /// <summary>Puts the deferral in <paramref name="context"/>'s transport and features, until <see cref="Uninstall"/>.</summary>
    public static StaticLaneShutdownHandOff Install(ConnectionContext context, IConnectionLifetimeNotificationFeature? lifetime)
    {
        var handOff = new StaticLaneShutdownHandOff(context.Transport, lifetime);
        context.Features.Set<IConnectionLifetimeNotificationFeature>(handOff);
        context.Transport = handOff;
        return handOff;
    }

    /// <summary>Gives <paramref name="context"/> back the transport and feature it had (Kestrel is done with it).</summary>
    public void Uninstall(ConnectionContext context)
    {
        context.Transport = _transport;
        context.Features.Set(_lifetime);
        Dispose();
    }

    public void Dispose() => _closeRequested.Dispose();

    PipeReader IDuplexPipe.Input => this;

    PipeWriter IDuplexPipe.Output => _output;

    CancellationToken IConnectionLifetimeNotificationFeature.ConnectionClosedRequested
    {
        get => _closeRequested.Token;
        set => throw new NotSupportedException();
    }

    void IConnectionLifetimeNotificationFeature.RequestClose() => _lifetime?.RequestClose();

    public override bool TryRead(out ReadResult result) => _input.TryRead(out result);

    public override ValueTask<ReadResult> ReadAsync(CancellationToken cancellationToken = default) => _input.ReadAsync(cancellationToken);

    public override void AdvanceTo(SequencePosition consumed)
    {
        _input.AdvanceTo(consumed);
        Release();
    }

    public override void AdvanceTo(SequencePosition consumed, SequencePosition examined)
    {
        _input.AdvanceTo(consumed, examined);
        Release();
    }

    public override void CancelPendingRead() => _input.CancelPendingRead();

    public override void Complete(Exception? exception = null) => _input.Complete(exception);

    public override ValueTask CompleteAsync(Exception? exception = null) => _input.CompleteAsync(exception);

    // Kestrel's callback (StopProcessingNextRequest: no keep-alive after this request) runs here, inside its parse.
    private void Release()
    {
        if (Interlocked.Exchange(ref _released, 1) == 0)
        {
            _closeRequested.Cancel();
        }
    }
}
