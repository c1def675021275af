using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace FastFiles.Caching;

/// <summary>
/// What FastFiles holds for as long as an application runs: file caches (their watchers, sweep timers, kept descriptors
/// and compression workers) and the static lane's heartbeats and roots. They are released when the application stops,
/// and also when its container is disposed without a stop: a host disposed after <c>StartAsync</c> without
/// <c>StopAsync</c> (<c>await using</c>, the usual TestServer pattern) or one whose start failed (a port in use) never
/// raises <c>ApplicationStopped</c>, and each such host kept an inotify instance, timers and descriptors until the
/// process ran out of them. The container disposes this holder when <c>AddFastFiles</c> registered it; an app without
/// <c>AddFastFiles</c> gets one per container that only the stop releases.
/// </summary>
internal sealed class FastFilesResources : IDisposable
{
    private readonly List<IDisposable> _held = [];
    private bool _disposed;
    private int _stopHooked;

    /// <summary>Releases <paramref name="resource"/> with the application that <paramref name="services"/> belong to, once.</summary>
    public static void Hold(IServiceProvider services, IDisposable resource)
    {
        FastFilesResources? holder = services.GetService<FastFilesResources>() ?? services.GetService<IOptions<FastFilesResources>>()?.Value;
        if (holder is null)
        {
            services.GetService<IHostApplicationLifetime>()?.ApplicationStopped.Register(resource.Dispose);
            return;
        }

        holder.Add(services, resource);
    }

    private void Add(IServiceProvider services, IDisposable resource)
    {
        bool disposed;
        lock (_held)
        {
            disposed = _disposed;
            if (!disposed)
            {
                _held.Add(resource);
            }
        }

        if (disposed)
        {
            resource.Dispose();
            return;
        }

        if (Interlocked.Exchange(ref _stopHooked, 1) == 0)
        {
            services.GetService<IHostApplicationLifetime>()?.ApplicationStopped.Register(Dispose);
        }
    }

    public void Dispose()
    {
        IDisposable[] held;
        lock (_held)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
            held = [.. _held];
            _held.Clear();
        }

        // Last in, first out: a lane root goes before the caches it may share with the middleware built earlier.
        for (int i = held.Length - 1; i >= 0; i--)
        {
            held[i].Dispose();
        }
    }
}
