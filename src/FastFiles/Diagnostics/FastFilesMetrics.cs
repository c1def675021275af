using System.Diagnostics.Metrics;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.Diagnostics;

/// <summary>What a file cache reports to the <c>fastfiles.cache.*</c> gauges; implemented by the cache, which sits above this layer.</summary>
internal interface ICacheGauges
{
    long BytesHeld { get; }

    int Count { get; }

    int OpenHandles { get; }
}

/// <summary>FastFiles' instruments (file cache and HTTP/2 TLS output stage), on the meter <c>FastFiles</c>, named like Kestrel's.</summary>
internal sealed class FastFilesMetrics
{
    public const string MeterName = "FastFiles";

    // For apps that did not call AddFastFiles: one instance per application, so instruments are not duplicated. Keyed by
    // the app's singleton IMeterFactory, which a request's scoped provider (results run with RequestServices) resolves too.
    private static readonly ConditionalWeakTable<object, FastFilesMetrics> Unregistered = [];
    private static readonly Lazy<FastFilesMetrics> WithoutServices = new(() => new FastFilesMetrics(null));

    private readonly Counter<long> _hits;
    private readonly Counter<long> _misses;
    private readonly Counter<long> _evictions;
    private readonly Counter<long> _invalidations;
    private readonly Counter<long> _stageConnections;
    private readonly Counter<long> _stageForwarded;
    private readonly UpDownCounter<long> _stageBuffered;
    private readonly Counter<long> _stageDrainTimeouts;
    private readonly Counter<long> _coalescedConnections;
    private readonly Counter<long> _sendPathBytes;
    private readonly Counter<long> _sendPathFallbacks;
    private readonly Counter<long> _laneRequests;
    private readonly Counter<long> _laneBytes;
    private readonly Counter<long> _laneHandOffs;
    private readonly Counter<long> _connectionsRefused;
    private readonly Counter<long> _compressed;
    private readonly Counter<long> _rewrittenDuringSend;
    private readonly List<ICacheGauges> _caches = [];
    private Func<long>? _sendPathBlocks;

    public FastFilesMetrics(IMeterFactory? meterFactory)
    {
        Meter meter = meterFactory?.Create(MeterName) ?? new Meter(MeterName);
        _hits = meter.CreateCounter<long>("fastfiles.cache.hits", "{request}", "Requests answered from the file cache without touching the file system.");
        _misses = meter.CreateCounter<long>("fastfiles.cache.misses", "{request}", "Requests that had to look the file up on disk.");
        _evictions = meter.CreateCounter<long>("fastfiles.cache.evictions", "{entry}", "Entries evicted to stay within the cache limits.");
        _invalidations = meter.CreateCounter<long>("fastfiles.cache.invalidations", "{entry}", "Entries dropped because the file changed.");
        meter.CreateObservableGauge("fastfiles.cache.bytes", () => Sum(c => c.BytesHeld), "By", "File content bytes held by the cache.");
        meter.CreateObservableGauge("fastfiles.cache.entries", () => Sum(c => c.Count), "{entry}", "Entries held by the cache.");
        meter.CreateObservableGauge("fastfiles.cache.open_files", () => Sum(c => c.OpenHandles), "{file}", "Descriptors of large files the cache keeps open across requests.");
        _stageConnections = meter.CreateCounter<long>(
            "fastfiles.tls_stage.connections", "{connection}", "TLS connections seen by the HTTP/2 TLS output stage, by decision (staged, passed_through).");
        _stageForwarded = meter.CreateCounter<long>("fastfiles.tls_stage.forwarded", "By", "Bytes the stage has handed to TLS.");
        _stageBuffered = meter.CreateUpDownCounter<long>(
            "fastfiles.tls_stage.buffered", "By", "Bytes Kestrel has flushed into stage pipes that TLS has not taken yet, over all connections.");
        _stageDrainTimeouts = meter.CreateCounter<long>(
            "fastfiles.tls_stage.drain_timeouts", "{connection}", "Connections aborted because the client did not read the end of the response in time.");
        _coalescedConnections = meter.CreateCounter<long>(
            "fastfiles.tls_records.coalesced_connections", "{connection}", "TLS connections whose writes are coalesced into full-size TLS records.");
        _sendPathBytes = meter.CreateCounter<long>(
            "fastfiles.send_path.bytes", "By", "File body bytes sent on zero-copy send path connections, by method (sendfile, copy).");
        _sendPathFallbacks = meter.CreateCounter<long>(
            "fastfiles.send_path.fallbacks", "{response}", "File bodies on send path connections that were not sent with sendfile, by reason.");
        meter.CreateObservableUpDownCounter(
            "fastfiles.send_path.blocks", () => _sendPathBlocks?.Invoke() ?? 0, "{block}",
            "Send path output blocks (16 KiB, or 64 KiB for a writer asking that much) rented and not yet returned, over all connections of the process, whichever host they belong to (zero when none is sending).");
        _connectionsRefused = meter.CreateCounter<long>(
            "fastfiles.connections.refused", "{connection}", "Connections closed on arrival because their socket fell within the descriptor reserve.");
        _laneRequests = meter.CreateCounter<long>("fastfiles.lane.requests", "{request}", "Requests answered by the HTTP/1.1 static lane (one with a body from disk once the body is in the socket).");
        _laneBytes = meter.CreateCounter<long>("fastfiles.lane.bytes", "By", "Response bytes (headers and bodies) written by the static lane; a body from disk once it is all in the socket.");
        _compressed = meter.CreateCounter<long>(
            "fastfiles.compression.variants", "{variant}",
            "Content-coded variants made by dynamic compression, by coding and outcome (published, not_smaller, changed, stale, over_budget, queue_full, failed).");
        _rewrittenDuringSend = meter.CreateCounter<long>(
            "fastfiles.file.rewritten_during_send", "{response}",
            "File bodies aborted before their last bytes because the file was written into while it was being sent.");
        _laneHandOffs = meter.CreateCounter<long>(
            "fastfiles.lane.handoffs", "{connection}", "Connections the static lane handed to Kestrel, by reason (fastfiles.lane.reason).");
    }

    /// <summary>Reports the send path's outstanding output blocks (the pool lives in a higher layer) on <c>fastfiles.send_path.blocks</c>.</summary>
    public void ObserveSendPathBlocks(Func<long> outstanding) => _sendPathBlocks ??= outstanding;

    /// <summary>The app's instance: the registered singleton, else one shared by everything built from <paramref name="services"/>.</summary>
    public static FastFilesMetrics For(IServiceProvider? services)
    {
        if (services is null)
        {
            return WithoutServices.Value;
        }

        if (services.GetService<FastFilesMetrics>() is { } registered)
        {
            return registered;
        }

        IMeterFactory? factory = services.GetService<IMeterFactory>();
        return Unregistered.GetValue((object?)factory ?? services, _ => new FastFilesMetrics(factory));
    }

    /// <summary>
    /// The registered instance, else the app's (<see cref="For"/>, keyed on its singleton meter factory), else one shared
    /// by the process. For providers that may be a request's scope: it never keys a new instance on the provider itself.
    /// </summary>
    public static FastFilesMetrics Resolve(IServiceProvider? services)
        => services?.GetService<FastFilesMetrics>()
            ?? (services?.GetService<IMeterFactory>() is not null ? For(services) : WithoutServices.Value);

    public void Hit() => _hits.Add(1);

    public void Miss() => _misses.Add(1);

    public void Evicted(int count) => _evictions.Add(count);

    public void Invalidated() => _invalidations.Add(1);

    public void StageDecided(bool staged)
        => _stageConnections.Add(1, new KeyValuePair<string, object?>("fastfiles.tls_stage.decision", staged ? "staged" : "passed_through"));

    public void StageFlushed(long bytes) => _stageBuffered.Add(bytes);

    public void StageForwarded(long bytes)
    {
        _stageBuffered.Add(-bytes);
        _stageForwarded.Add(bytes);
    }

    public void StageDrainTimedOut() => _stageDrainTimeouts.Add(1);

    public void RecordsCoalesced() => _coalescedConnections.Add(1);

    public void SendPathSent(long bytes, bool sendfile)
        => _sendPathBytes.Add(bytes, new KeyValuePair<string, object?>("fastfiles.send_path.method", sendfile ? "sendfile" : "copy"));

    public void SendPathFallback(string reason)
        => _sendPathFallbacks.Add(1, new KeyValuePair<string, object?>("fastfiles.send_path.reason", reason));

    public void LaneServed(int requests, long bytes)
    {
        _laneRequests.Add(requests);
        _laneBytes.Add(bytes);
    }

    public void ConnectionRefused() => _connectionsRefused.Add(1);

    public void RewrittenDuringSend() => _rewrittenDuringSend.Add(1);

    public void LaneHandedOff(string reason) => _laneHandOffs.Add(1, new KeyValuePair<string, object?>("fastfiles.lane.reason", reason));

    /// <summary>One variant's fate; <paramref name="coding"/> is null for outcomes that concern a whole file (queue_full, failed).</summary>
    public void Compressed(string? coding, string outcome)
    {
        var outcomeTag = new KeyValuePair<string, object?>("fastfiles.compression.outcome", outcome);
        if (coding is null)
        {
            _compressed.Add(1, outcomeTag);
        }
        else
        {
            _compressed.Add(1, outcomeTag, new KeyValuePair<string, object?>("fastfiles.compression.coding", coding));
        }
    }

    public void Register(ICacheGauges cache)
    {
        lock (_caches)
        {
            _caches.Add(cache);
        }
    }

    public void Unregister(ICacheGauges cache)
    {
        lock (_caches)
        {
            _caches.Remove(cache);
        }
    }

    private long Sum(Func<ICacheGauges, long> selector)
    {
        lock (_caches)
        {
            long total = 0;
            foreach (ICacheGauges cache in _caches)
            {
                total += selector(cache);
            }

            return total;
        }
    }
}
