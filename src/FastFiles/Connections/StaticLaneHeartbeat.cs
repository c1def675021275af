using System.Collections.Concurrent;
using System.IO.Pipelines;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;

namespace FastFiles.Connections;

/// <summary>
/// The lane's clock for one endpoint: once a second it closes lane connections idle past their keep-alive deadline and
/// aborts those whose client has not taken a response in time, as Kestrel's own heartbeat does. Requests then pay no
/// timer or cancellation registration: a connection only writes two deadlines. Stopped with the application.
/// </summary>
internal sealed class StaticLaneHeartbeat : IDisposable
{
    private readonly ConcurrentDictionary<LaneConnection, byte> _connections = new();
    private readonly Timer _timer;

    public StaticLaneHeartbeat()
        => _timer = new Timer(static state => ((StaticLaneHeartbeat)state!).Tick(), this, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(1));

    public void Add(LaneConnection connection) => _connections.TryAdd(connection, 0);

    public void Remove(LaneConnection connection) => _connections.TryRemove(connection, out _);

    public void Dispose() => _timer.Dispose();

    private void Tick()
    {
        long now = Environment.TickCount64;
        foreach (KeyValuePair<LaneConnection, byte> pair in _connections)
        {
            pair.Key.OnTick(now);
        }
    }
}

/// <summary>
/// One connection's state while the lane holds it: its keep-alive and write deadlines and the shutdown signal. The
/// heartbeat and the shutdown callback wake an idle read with <see cref="PipeReader.CancelPendingRead"/>, only under the
/// lock and only while the lane is idle; a cancellation that races with data is remembered, and taken before a hand-off.
/// </summary>
internal sealed class LaneConnection : IDisposable
{
    private readonly Lock _lock = new();
    private readonly StaticLaneHeartbeat _heartbeat;
    private readonly ConnectionContext _context;
    private readonly PipeReader _input;
    private readonly CancellationTokenRegistration _closing;
    private long _idleDeadline = long.MaxValue;
    private long _writeDeadline = long.MaxValue;
    private bool _cancelPending;
    private bool _timedOut;
    private bool _handedOff;
    private bool _partialWait;
    private volatile bool _closeRequested;

    public LaneConnection(StaticLaneHeartbeat heartbeat, ConnectionContext context, PipeReader input, IConnectionLifetimeNotificationFeature? lifetime)
    {
        _heartbeat = heartbeat;
        _context = context;
        _input = input;
        heartbeat.Add(this);
        Lifetime = lifetime;
        if (lifetime is not null)
        {
            _closing = lifetime.ConnectionClosedRequested.Register(static state => ((LaneConnection)state!).OnCloseRequested(), this);
        }
    }

    public bool CloseRequested => _closeRequested;

    /// <summary>The connection's own shutdown signal (Kestrel's), when it has one.</summary>
    public IConnectionLifetimeNotificationFeature? Lifetime { get; }

    /// <summary>A wait ended by its deadline (keep-alive, or the rest of a request within RequestHeadersTimeout).</summary>
    public bool TimedOut
    {
        get
        {
            lock (_lock)
            {
                return _timedOut;
            }
        }
    }

    /// <summary>
    /// Before waiting for bytes (the next request, or the rest of one) until <paramref name="deadline"/>
    /// (<see cref="Environment.TickCount64"/>); false when the connection should close instead.
    /// </summary>
    public bool EnterWait(long deadline, bool partial)
    {
        lock (_lock)
        {
            // The rest of a request under way is awaited through graceful shutdown, as Kestrel finishes a request it
            // has begun to read; only an idle wait ends there.
            if ((_closeRequested && !partial) || _timedOut)
            {
                return false;
            }

            _idleDeadline = deadline;
            _partialWait = partial;
            return true;
        }
    }

    /// <summary>After the read; true when the wait ended by its deadline or by shutdown.</summary>
    public bool LeaveWait(bool canceled)
    {
        lock (_lock)
        {
            _idleDeadline = long.MaxValue;
            if (canceled)
            {
                _cancelPending = false;
            }

            return canceled && (_timedOut || (_closeRequested && !_partialWait));
        }
    }

    /// <summary>
    /// The lane gives the connection to Kestrel; true when a cancellation is pending and must be taken first.
    /// <paramref name="closeRequested"/>: whether graceful shutdown began before (after it, Kestrel sees it itself).
    /// </summary>
    public bool HandOff(out bool closeRequested)
    {
        lock (_lock)
        {
            _handedOff = true;
            closeRequested = _closeRequested;
            return _cancelPending;
        }
    }

    /// <summary>Arms the write deadline: <paramref name="seconds"/> from now (capped at a year), plus <paramref name="slackMs"/>.</summary>
    public void StartWrite(double seconds, long slackMs)
        => Volatile.Write(ref _writeDeadline, Environment.TickCount64 + (long)Math.Min(seconds * 1000, TimeSpan.FromDays(365).TotalMilliseconds) + slackMs);

    public void EndWrite() => Volatile.Write(ref _writeDeadline, long.MaxValue);

    public void OnTick(long now)
    {
        if (now > Volatile.Read(ref _writeDeadline))
        {
            _context.Abort(new ConnectionAbortedException("The client did not read the response at the minimum data rate."));
            return;
        }

        lock (_lock)
        {
            if (!_handedOff && now > _idleDeadline)
            {
                _timedOut = true;
                WakeLocked();
            }
        }
    }

    private void OnCloseRequested()
    {
        lock (_lock)
        {
            _closeRequested = true;
            if (!_handedOff && _idleDeadline != long.MaxValue && !_partialWait)
            {
                WakeLocked();
            }
        }
    }

    private void WakeLocked()
    {
        _cancelPending = true;
        _input.CancelPendingRead();
    }

    public void Dispose()
    {
        _heartbeat.Remove(this);
        _closing.Dispose();
    }
}
