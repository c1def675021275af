using System.Net;
using FastFiles.Connections;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Transport.Sockets;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace FastFiles.Hosting;

/// <summary>
/// Kestrel's socket transport with the descriptor reserve checked in its accept loop. Kestrel's loop takes every
/// connection already queued before any connection middleware runs (the middleware is started on the thread pool), so
/// a burst larger than the reserve used to fill the descriptor table before one refusal closed a socket (measured: 800
/// connects at once against RLIMIT_NOFILE 400 peaked at 399 descriptors, and the first request through Kestrel failed to
/// load an assembly). Here a socket within the reserve is closed before the next accept(2), so at most one of the
/// reserved descriptors is ever held by a connection.
/// </summary>
/// <remarks>
/// Replaces the <see cref="SocketTransportFactory"/> registration when <c>AddFastFiles()</c> finds it; the reserve is
/// the one given to <c>KestrelServerOptions.UseFastFilesConnections</c> (without that call nothing is checked here).
/// <see cref="DescriptorReserveConnectionMiddleware"/> stays on the endpoints as the check for other registrations.
/// </remarks>
internal sealed class DescriptorReserveListenerFactory(IConnectionListenerFactory inner, IServiceProvider services)
    : IConnectionListenerFactory, IConnectionListenerFactorySelector
{
    /// <summary>
    /// Replaces the socket transport's registration in <paramref name="services"/> with this factory around it; does
    /// nothing when the registration is not there (another transport, or Kestrel registered after this call).
    /// </summary>
    public static void Register(IServiceCollection services)
    {
        for (int i = services.Count - 1; i >= 0; i--)
        {
            ServiceDescriptor descriptor = services[i];
            if (descriptor.ServiceType == typeof(IConnectionListenerFactory) && !descriptor.IsKeyedService
                && descriptor.ImplementationType == typeof(SocketTransportFactory))
            {
                services[i] = ServiceDescriptor.Singleton<IConnectionListenerFactory>(sp => new DescriptorReserveListenerFactory(
                    ActivatorUtilities.CreateInstance<SocketTransportFactory>(sp), sp));
                return;
            }
        }
    }

    public bool CanBind(EndPoint endpoint) => inner is not IConnectionListenerFactorySelector selector || selector.CanBind(endpoint);

    public async ValueTask<IConnectionListener> BindAsync(EndPoint endpoint, CancellationToken cancellationToken = default)
    {
        IConnectionListener listener = await inner.BindAsync(endpoint, cancellationToken);
        int reserve = FastFilesKestrelState.Of(services)?.Options?.DescriptorReserve ?? 0;
        if (reserve <= 0 || !OperatingSystem.IsLinux())
        {
            return listener;
        }

        DescriptorReserveConnectionMiddleware.MeasureBaseline();
        ILogger logger = services.GetService<ILoggerFactory>()?.CreateLogger(DescriptorReserveConnectionMiddleware.LoggerCategory) ?? NullLogger.Instance;
        return new Listener(listener, reserve, FastFilesMetrics.For(services), logger);
    }

    private sealed class Listener(IConnectionListener inner, int reserve, FastFilesMetrics metrics, ILogger logger) : IConnectionListener
    {
        public EndPoint EndPoint => inner.EndPoint;

        public async ValueTask<ConnectionContext?> AcceptAsync(CancellationToken cancellationToken = default)
        {
            while (true)
            {
                ConnectionContext? connection = await inner.AcceptAsync(cancellationToken);
                if (connection is null || !Refuse(connection))
                {
                    return connection;
                }

                // The abort closed the socket; Kestrel never sees this connection, so its transport is ours to dispose.
                // Not awaited: the dispose waits for the transport's loops to end, and the next accept must not (in a
                // flood the backlog would overflow meanwhile).
                _ = DisposeRefusedAsync(connection);
            }
        }

        private bool Refuse(ConnectionContext connection)
        {
            try
            {
                return DescriptorReserveConnectionMiddleware.TryRefuse(connection, reserve, metrics, logger);
            }
            catch (Exception ex)
            {
                // An exception here would end Kestrel's accept loop for the endpoint: let the connection through instead
                // (the endpoint's middleware, when present, checks again).
                Log.DescriptorReserveCheckFailed(logger, ex);
                return false;
            }
        }

        private async Task DisposeRefusedAsync(ConnectionContext connection)
        {
            try
            {
                await connection.DisposeAsync();
            }
            catch (Exception ex)
            {
                Log.RefusedConnectionDisposeFailed(logger, ex);
            }
        }

        public ValueTask UnbindAsync(CancellationToken cancellationToken = default) => inner.UnbindAsync(cancellationToken);

        public ValueTask DisposeAsync() => inner.DisposeAsync();
    }
}
