using System.IO.Pipelines;
using FastFiles.Diagnostics;
using FastFiles.Connections.SendPath;
using FastFiles.IO;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.Logging;

namespace FastFiles.Connections;

/// <summary>
/// Connection middleware, outermost on a plaintext endpoint: Kestrel's output goes to a <see cref="SendPathWriter"/>
/// that sends to the socket itself (gathered sendmsg(2), and sendfile(2) for file bodies), instead of to the socket
/// transport's pipe and send loop. Input passes through untouched. Connections without a socket (another transport),
/// with TLS below us, or on a platform without the calls pass through entirely.
/// </summary>
internal sealed class SendPathConnectionMiddleware
{
    private readonly ConnectionDelegate _next;
    private readonly ZeroCopySendFileOptions _options;
    private readonly long? _maxResponseBufferSize;
    private readonly FastFilesMetrics _metrics;
    private readonly ILogger _logger;

    public SendPathConnectionMiddleware(ConnectionDelegate next, ZeroCopySendFileOptions options, long? maxResponseBufferSize, FastFilesMetrics metrics, ILogger logger)
    {
        _next = next;
        _options = options;
        _maxResponseBufferSize = maxResponseBufferSize;
        _metrics = metrics;
        _logger = logger;
        metrics.ObserveSendPathBlocks(static () => BlockPool.Outstanding);
    }

    public Task OnConnectionAsync(ConnectionContext context)
    {
        if (!Native.IsSupported
            || context.Features.Get<IConnectionSocketFeature>()?.Socket is not { } socket
            || context.Features.Get<ITlsConnectionFeature>() is not null)
        {
            return _next(context);
        }

        return RunAsync(context, socket);
    }

    private async Task RunAsync(ConnectionContext context, System.Net.Sockets.Socket socket)
    {
        // Kestrel's socket transport starts receiving before connection middleware runs, which makes the descriptor
        // non-blocking; if it is not, our inline sends could block a thread, so the connection passes through.
        if (!Native.IsNonBlocking((int)socket.Handle))
        {
            _metrics.SendPathFallback("blocking_socket");
            await _next(context);
            return;
        }

        IDuplexPipe original = context.Transport;
        var writer = new SendPathWriter(context, socket, _options, _maxResponseBufferSize, _metrics, _logger);
        var input = new SendPathInput(original.Input);
        writer.AttachInput(input);
        context.Transport = new SendPathDuplexPipe(input, writer);
        context.Features.Set<IZeroCopyFileSender>(writer);
        ZeroCopySenders.AnyInProcess = true;
        try
        {
            await _next(context);
        }
        finally
        {
            // Every send finishes before we return: the transport closes the socket right after.
            await writer.DrainAsync();
            writer.Release();
            context.Features.Set<IZeroCopyFileSender>(null);
            context.Transport = original;
        }
    }

    private sealed class SendPathDuplexPipe(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
