using System.Diagnostics.Metrics;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>Sums one <c>long</c> instrument of one app's meter factory (other tests' hosts run in parallel).</summary>
public sealed class InstrumentRecorder : IDisposable
{
    private readonly MeterListener _listener = new();
    private long _total;

    public InstrumentRecorder(IMeterFactory factory, string instrumentName)
    {
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Scope == factory && instrument.Name == instrumentName)
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((_, value, _, _) => Interlocked.Add(ref _total, value));
        _listener.Start();
    }

    public long Total => Interlocked.Read(ref _total);

    public void Dispose() => _listener.Dispose();
}
