namespace FastFiles.Diagnostics;

/// <summary>Counters shared by the connections of one <c>Http2TlsOutputStageOptions</c>; read by tests.</summary>
internal sealed class Http2TlsOutputStageStatistics
{
    private long _connectionsStaged;
    private long _connectionsPassedThrough;
    private long _peakBufferedBytes;
    private long _largestFlushBatch;
    private long _bytesForwarded;

    public long ConnectionsStaged => Volatile.Read(ref _connectionsStaged);

    public long ConnectionsPassedThrough => Volatile.Read(ref _connectionsPassedThrough);

    /// <summary>The most bytes any one connection had in its stage pipe (flushed and unflushed), sampled at each flush.</summary>
    public long PeakBufferedBytes => Volatile.Read(ref _peakBufferedBytes);

    /// <summary>The most bytes Kestrel wrote between two flushes.</summary>
    public long LargestFlushBatch => Volatile.Read(ref _largestFlushBatch);

    public long BytesForwarded => Volatile.Read(ref _bytesForwarded);

    public void Staged() => Interlocked.Increment(ref _connectionsStaged);

    public void PassedThrough() => Interlocked.Increment(ref _connectionsPassedThrough);

    public void Forwarded(long bytes) => Interlocked.Add(ref _bytesForwarded, bytes);

    public void Flushed(long buffered, long batch)
    {
        RaiseTo(ref _peakBufferedBytes, buffered);
        RaiseTo(ref _largestFlushBatch, batch);
    }

    private static void RaiseTo(ref long location, long value)
    {
        long current = Volatile.Read(ref location);
        while (value > current)
        {
            long seen = Interlocked.CompareExchange(ref location, value, current);
            if (seen == current)
            {
                return;
            }

            current = seen;
        }
    }
}
