using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace FastFiles.IO;

/// <summary>
/// Keeps Kestrel's minimum response data rate meaningful for bodies written with GetSpan/GetMemory + Advance.
/// </summary>
/// <remarks>
/// Kestrel's HTTP/1.1 output counts only bytes passed to Write (and headers) towards a flush: its deadline for a flush
/// is the larger of the grace period and counted bytes / MinResponseDataRate. Advanced bytes count as zero, so a
/// 64 KiB flush to a reader at 16 KiB/s whose socket buffers are full had to drain within the 5 s grace period and the
/// connection was cut after about 7 s (issue 10; dotnet/aspnetcore Http1OutputProducer.Advance, TimeoutControl
/// .BytesWrittenToBuffer). Widening this response's grace period to the time one flush of ours needs at the configured
/// rate gives each flush exactly the deadline Kestrel would have given had it counted the bytes: a reader slower than
/// the configured minimum is still cut, a faster one is not. HTTP/2 streams have no such feature (their frame writer
/// counts every byte itself), and Kestrel resets the rate for the next request on the connection.
/// </remarks>
internal static class ResponseDataRate
{
    // One widened rate per (configured rate, flush size): the configured rate is normally one server-wide instance,
    // so this allocates once, not per response.
    private static Widened? s_last;

    /// <summary>
    /// Lets every flush of this response carry up to <paramref name="bytesPerFlush"/> uncounted bytes. No-op when the
    /// rate is off (null), absent (HTTP/2, non-Kestrel servers) or already generous enough.
    /// </summary>
    public static void AllowUncountedFlushes(IHttpMinResponseDataRateFeature? feature, long bytesPerFlush)
    {
        if (feature?.MinDataRate is not { } rate || rate.BytesPerSecond <= 0)
        {
            return;
        }

        TimeSpan needed = TimeSpan.FromSeconds(bytesPerFlush / rate.BytesPerSecond);
        if (needed <= rate.GracePeriod)
        {
            return;
        }

        Widened? last = s_last;
        if (last is null || !ReferenceEquals(last.Source, rate) || last.BytesPerFlush != bytesPerFlush)
        {
            last = new Widened(rate, bytesPerFlush, new MinDataRate(rate.BytesPerSecond, needed));
            s_last = last;
        }

        feature.MinDataRate = last.Rate;
    }

    private sealed record Widened(MinDataRate Source, long BytesPerFlush, MinDataRate Rate);
}
