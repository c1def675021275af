using System.IO.Pipelines;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;

namespace FastFiles.Connections;

/// <summary>
/// Connection middleware placed after <c>UseHttps</c>: gives Kestrel a <see cref="TlsRecordWriter"/> in place of the
/// TLS pipe writer, so responses leave in full-size TLS records; inline, with no extra pipe and no thread hop. Input
/// passes through untouched; connections without an <c>SslStream</c> (plaintext) pass through entirely.
/// </summary>
internal sealed class TlsRecordCoalescingConnectionMiddleware(ConnectionDelegate next, FastFilesMetrics metrics)
{
    public Task OnConnectionAsync(ConnectionContext context)
    {
        if (context.Features.Get<ISslStreamFeature>()?.SslStream is not { } ssl)
        {
            return next(context);
        }

        return CoalesceAsync(context, ssl);
    }

    private async Task CoalesceAsync(ConnectionContext context, System.Net.Security.SslStream ssl)
    {
        metrics.RecordsCoalesced();
        IDuplexPipe tls = context.Transport;
        var writer = new TlsRecordWriter(ssl, tls.Output, reason => context.Abort(new ConnectionAbortedException(reason.Message, reason)));
        context.Transport = new CoalescingDuplexPipe(tls.Input, writer);
        try
        {
            await next(context);
        }
        finally
        {
            // Kestrel completes its output before it returns; this covers a next that threw before that.
            writer.Complete();
            context.Transport = tls;
        }
    }

    private sealed class CoalescingDuplexPipe(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }
}
