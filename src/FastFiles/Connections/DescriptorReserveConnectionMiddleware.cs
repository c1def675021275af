using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace FastFiles.Connections;

/// <summary>
/// Connection middleware, outermost: closes a connection at once when its socket took one of the process's last
/// <c>reserve</c> descriptors (RLIMIT_NOFILE). accept(2) returns the lowest free descriptor, so a socket numbered
/// <c>limit - reserve</c> or higher means every descriptor below it is in use; kept connections therefore never hold
/// the top of the table, which stays free for what must not fail: opening files, and the pipe the .NET runtime needs to
/// start a thread (measured: at the limit, a thread start fails pipe2 with EMFILE and the process aborts, "Out of
/// memory."; issue 10).
/// </summary>
internal sealed class DescriptorReserveConnectionMiddleware(ConnectionDelegate next, int reserve, FastFilesMetrics metrics, ILogger logger)
{
    public const string LoggerCategory = "FastFiles.Connections.DescriptorReserve";

    // One warning per burst: a burst is over after this long without one.
    private static readonly long QuietTicks = TimeSpan.FromSeconds(10).Ticks;
    private static long s_lastWarningTicks = long.MinValue / 2;
    private static long s_refused;

    /// <summary>Adds the check to <paramref name="listenOptions"/>, as the next middleware, when <paramref name="reserve"/> is positive (Linux only).</summary>
    public static void Use(ListenOptions listenOptions, int reserve)
    {
        if (reserve > 0 && OperatingSystem.IsLinux())
        {
            listenOptions.Use(next => Wrap(next, reserve, listenOptions));
        }
    }

    /// <summary>The check in front of <paramref name="next"/>; <paramref name="next"/> itself when <paramref name="reserve"/> is 0 or not on Linux.</summary>
    public static ConnectionDelegate Wrap(ConnectionDelegate next, int reserve, ListenOptions listenOptions)
    {
        if (reserve <= 0 || !OperatingSystem.IsLinux())
        {
            return next;
        }

        MeasureBaseline();
        ILogger logger = listenOptions.ApplicationServices?.GetService<ILoggerFactory>()?.CreateLogger(LoggerCategory) ?? NullLogger.Instance;
        return new DescriptorReserveConnectionMiddleware(next, reserve, FastFilesMetrics.For(listenOptions.ApplicationServices), logger).OnConnectionAsync;
    }

    public Task OnConnectionAsync(ConnectionContext context)
    {
        if (TryRefuse(context, reserve, metrics, logger))
        {
            return Task.CompletedTask;
        }

        return next(context);
    }

    /// <summary>
    /// Aborts <paramref name="context"/> (which closes its socket at once) when its socket is one of the last
    /// <paramref name="reserve"/> descriptors, counting and logging the refusal; false, and nothing done, otherwise.
    /// </summary>
    public static bool TryRefuse(ConnectionContext context, int reserve, FastFilesMetrics metrics, ILogger logger)
    {
        if (reserve <= 0 || context.Features.Get<IConnectionSocketFeature>()?.Socket is not { } socket || Limit() is not (long limit and > 0))
        {
            return false;
        }

        long descriptor = (long)socket.Handle;
        // The reserve applied is at most this (see Effective): far from the limit, the common case, nothing more is asked,
        // and the reduced reserve's warning comes only when a connection comes near it.
        if (descriptor < limit - Math.Min(reserve, limit / 2))
        {
            return false;
        }

        long effective = Effective(limit, reserve, logger);
        if (descriptor < limit - effective)
        {
            return false;
        }

        metrics.ConnectionRefused();
        long now = DateTime.UtcNow.Ticks;
        long last = Interlocked.Read(ref s_lastWarningTicks);
        if (now - last >= QuietTicks && Interlocked.CompareExchange(ref s_lastWarningTicks, now, last) == last)
        {
            Log.DescriptorReserveReached(logger, descriptor, limit, effective, Interlocked.Exchange(ref s_refused, 0));
        }
        else
        {
            Interlocked.Increment(ref s_refused);
        }

        // Nothing has been read or written: closing frees the descriptor now.
        context.Abort(new ConnectionAbortedException("The process is within its descriptor reserve."));
        return true;
    }

    private static long s_baseline = -1;
    private static int s_reducedLogged;

    /// <summary>
    /// Counts the descriptors the process holds now, as it binds an endpoint (at rest: runtime, assemblies, listeners,
    /// logs; no connection yet), keeping the smallest count seen: a count taken under load would shrink the reserve.
    /// </summary>
    public static void MeasureBaseline()
    {
        long count;
        try
        {
            count = Directory.EnumerateFileSystemEntries("/proc/self/fd").LongCount();
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            return;
        }

        long seen;
        while (((seen = Volatile.Read(ref s_baseline)) < 0 || count < seen) && Interlocked.CompareExchange(ref s_baseline, count, seen) != seen)
        {
        }
    }

    // The reserve that leaves a connection room: at most half the limit (a reserve set at or above it, a value meant for
    // another machine, would refuse every connection), and half the room the limit leaves above the descriptors held at
    // rest (ulimit -n 256 with about 200 held at rest refused every connection, where Kestrel alone serves).
    private static long Effective(long limit, int reserve, ILogger logger)
    {
        if (Volatile.Read(ref s_baseline) < 0)
        {
            MeasureBaseline();
        }

        long room = limit - Math.Max(0, Volatile.Read(ref s_baseline));
        long effective = Math.Min(reserve, Math.Min(limit / 2, Math.Max(0, room / 2)));
        if (effective < reserve && effective < limit / 2 && Interlocked.Exchange(ref s_reducedLogged, 1) == 0)
        {
            Log.DescriptorReserveReduced(logger, reserve, effective, limit, Volatile.Read(ref s_baseline));
        }

        return effective;
    }

    // The soft limit, read again at most once a second (prlimit can change it while the process runs).
    private static long Limit() => FastFiles.Files.DescriptorExhaustion.ProcessLimit();
}
