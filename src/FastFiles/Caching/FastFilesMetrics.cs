using System.Diagnostics.Metrics;

namespace FastFiles.Caching;

/// <summary>FastFiles' instruments, on the meter <c>FastFiles</c>, named like Kestrel's.</summary>
internal sealed class FastFilesMetrics
{
    public const string MeterName = "FastFiles";

    private readonly Counter<long> _hits;
    private readonly Counter<long> _misses;
    private readonly Counter<long> _evictions;
    private readonly Counter<long> _invalidations;
    private readonly List<FileCache> _caches = [];

    public FastFilesMetrics(IMeterFactory? meterFactory)
    {
        Meter meter = meterFactory?.Create(MeterName) ?? new Meter(MeterName);
        _hits = meter.CreateCounter<long>("fastfiles.cache.hits", "{request}", "Requests answered from the file cache without touching the file system.");
        _misses = meter.CreateCounter<long>("fastfiles.cache.misses", "{request}", "Requests that had to look the file up on disk.");
        _evictions = meter.CreateCounter<long>("fastfiles.cache.evictions", "{entry}", "Entries evicted to stay within the cache limits.");
        _invalidations = meter.CreateCounter<long>("fastfiles.cache.invalidations", "{entry}", "Entries dropped because the file changed.");
        meter.CreateObservableGauge("fastfiles.cache.bytes", () => Sum(c => c.BytesHeld), "By", "File content bytes held by the cache.");
        meter.CreateObservableGauge("fastfiles.cache.entries", () => Sum(c => c.Count), "{entry}", "Entries held by the cache.");
    }

    public void Hit() => _hits.Add(1);

    public void Miss() => _misses.Add(1);

    public void Evicted(int count) => _evictions.Add(count);

    public void Invalidated() => _invalidations.Add(1);

    public void Register(FileCache cache)
    {
        lock (_caches)
        {
            _caches.Add(cache);
        }
    }

    public void Unregister(FileCache cache)
    {
        lock (_caches)
        {
            _caches.Remove(cache);
        }
    }

    private long Sum(Func<FileCache, long> selector)
    {
        lock (_caches)
        {
            long total = 0;
            foreach (FileCache cache in _caches)
            {
                total += selector(cache);
            }

            return total;
        }
    }
}
