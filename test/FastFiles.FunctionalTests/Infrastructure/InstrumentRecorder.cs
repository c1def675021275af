using System.Diagnostics.Metrics;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>
/// Sums one <c>long</c> instrument of one app's meter factory (other tests' hosts run in parallel), optionally only the
/// measurements that carry a given tag value.
/// </summary>
public sealed class InstrumentRecorder : IDisposable
{
    private readonly MeterListener _listener = new();
    private long _total;

    public InstrumentRecorder(IMeterFactory factory, string instrumentName, KeyValuePair<string, string>? tag = null)
    {
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Scope == factory && instrument.Name == instrumentName)
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
        {
            if (tag is not { } wanted || HasTag(tags, wanted))
            {
                Interlocked.Add(ref _total, value);
            }
        });
        _listener.Start();
    }

    public long Total => Interlocked.Read(ref _total);

    public void Dispose() => _listener.Dispose();

    private static bool HasTag(ReadOnlySpan<KeyValuePair<string, object?>> tags, KeyValuePair<string, string> wanted)
    {
        foreach (KeyValuePair<string, object?> tag in tags)
        {
            if (tag.Key == wanted.Key && tag.Value as string == wanted.Value)
            {
                return true;
            }
        }

        return false;
    }
}
