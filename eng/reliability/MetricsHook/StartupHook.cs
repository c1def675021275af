using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using System.Globalization;
using System.Text;

/// <summary>
/// Loaded by the runtime before Main when DOTNET_STARTUP_HOOKS names this assembly. Listens to the FastFiles meter and
/// Kestrel's (connections, memory pool) and writes every instrument's current value, summed over tags (counters and
/// up-down counters as running totals, gauges as last values), to the file named by FASTFILES_METRICS_FILE twice a second.
/// </summary>
internal static class StartupHook
{
    private static readonly ConcurrentDictionary<string, double> Totals = new();
    private static readonly ConcurrentDictionary<string, double> Gauges = new();
    private static MeterListener? s_listener;
    private static Timer? s_timer;

    public static void Initialize()
    {
        string? path = Environment.GetEnvironmentVariable("FASTFILES_METRICS_FILE");
        if (string.IsNullOrEmpty(path))
        {
            return;
        }

        var listener = new MeterListener();
        listener.InstrumentPublished = (instrument, l) =>
        {
            string meter = instrument.Meter.Name;
            if (meter == "FastFiles" || meter.StartsWith("Microsoft.AspNetCore.", StringComparison.Ordinal))
            {
                l.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, _, _) => Record(instrument, value));
        listener.SetMeasurementEventCallback<int>((instrument, value, _, _) => Record(instrument, value));
        listener.SetMeasurementEventCallback<double>((instrument, value, _, _) => Record(instrument, value));
        listener.Start();
        s_listener = listener;
        s_timer = new Timer(_ => Write(path), null, 500, 500);
    }

    private static void Record(Instrument instrument, double value)
    {
        if (instrument.GetType().Name.StartsWith("Observable", StringComparison.Ordinal))
        {
            // Observable instruments report their whole value each collection; tags are summed within one collection.
            Gauges.AddOrUpdate(instrument.Name, value, (_, old) => old + value);
        }
        else if (instrument is not Histogram<double> and not Histogram<long>)
        {
            Totals.AddOrUpdate(instrument.Name, value, (_, old) => old + value);
        }
    }

    private static void Write(string path)
    {
        try
        {
            Gauges.Clear();
            s_listener?.RecordObservableInstruments();
            var json = new StringBuilder("{");
            foreach ((string name, double value) in Totals.Concat(Gauges).OrderBy(p => p.Key, StringComparer.Ordinal))
            {
                json.Append(CultureInfo.InvariantCulture, $"\"{name}\":{value},");
            }

            json.Append(CultureInfo.InvariantCulture, $"\"time\":{DateTimeOffset.UtcNow.ToUnixTimeMilliseconds()}}}");
            File.WriteAllText(path + ".tmp", json.ToString());
            File.Move(path + ".tmp", path, overwrite: true);
        }
        catch (IOException)
        {
            // Out of descriptors (the exhaustion case): the next tick writes again.
        }
    }
}
