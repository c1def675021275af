using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Text.Json;

namespace FastFiles.BenchHost;

/// <summary>
/// Counts requests and answers <c>GET /_stats</c> (not counted) with the process' totals, so the harness can turn
/// deltas over a run into allocated bytes per request.
/// </summary>
internal sealed class ServerStats
{
    private const string StatsPath = "/_stats";

    private readonly MeterListener _laneListener = new();
    private long _requests;

    public ServerStats()
    {
        // Requests the static lane answers never reach this middleware: count them from its metric.
        _laneListener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Name == "FastFiles" && instrument.Name == "fastfiles.lane.requests")
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _laneListener.SetMeasurementEventCallback<long>((_, value, _, _) => Interlocked.Add(ref _requests, value));
        _laneListener.Start();
    }

    public RequestDelegate Middleware(RequestDelegate next) => context =>
    {
        if (context.Request.Path.Equals(StatsPath, StringComparison.Ordinal))
        {
            return WriteAsync(context.Response);
        }

        Interlocked.Increment(ref _requests);
        return next(context);
    };

    private Task WriteAsync(HttpResponse response)
    {
        using var process = Process.GetCurrentProcess();
        var body = new Dictionary<string, long>(StringComparer.Ordinal)
        {
            // Precise: includes every thread's allocation context, so deltas are exact between two calls.
            ["allocatedBytes"] = GC.GetTotalAllocatedBytes(precise: true),
            ["requests"] = Interlocked.Read(ref _requests),
            ["workingSet"] = process.WorkingSet64,
            ["peakWorkingSet"] = process.PeakWorkingSet64,
            ["gen0"] = GC.CollectionCount(0),
            ["gen1"] = GC.CollectionCount(1),
            ["gen2"] = GC.CollectionCount(2),
        };
        response.ContentType = "application/json";
        response.Headers.CacheControl = "no-store";
        return response.WriteAsync(JsonSerializer.Serialize(body));
    }
}
