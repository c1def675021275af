using System.Buffers;
using System.IO.Pipelines;
using FastFiles.Caching;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Connections.Features;

namespace FastFiles.Connections;

/// <summary>
/// Connection middleware placed after <c>UseHttps</c>: Kestrel's writes into the TLS pipe writer land in buffers of a
/// full TLS record (16 KiB) instead of the memory pool's 4 KiB blocks, inline, with no extra pipe and no thread hop.
/// </summary>
/// <remarks>
/// The TLS side of Kestrel's connection is a <c>StreamPipeWriter</c> over <c>SslStream</c> that writes each buffer
/// segment to the stream separately, and <c>SslStream</c> makes one record (one encryption call and one transport
/// write) per write. Kestrel copies response bodies segment by segment out of 4 KiB pool blocks, so a 64 KiB body
/// becomes sixteen 4 KiB records. The writer asks for its memory in 16 KiB pieces (RFC 8446 5.1: the largest record
/// payload) whenever the current piece cannot take the write, so the same bytes go out as four records.
/// </remarks>
internal sealed class TlsRecordCoalescingMiddleware(ConnectionDelegate next, FastFilesMetrics metrics)
{
    public Task OnConnectionAsync(ConnectionContext context)
    {
        if (context.Features.Get<ITlsHandshakeFeature>() is null)
        {
            return next(context);
        }

        return CoalesceAsync(context);
    }

    private async Task CoalesceAsync(ConnectionContext context)
    {
        metrics.RecordsCoalesced();
        IDuplexPipe tls = context.Transport;
        context.Transport = new CoalescingDuplexPipe(tls.Input, new RecordSizedWriter(tls.Output));
        try
        {
            await next(context);
        }
        finally
        {
            context.Transport = tls;
        }
    }

    private sealed class CoalescingDuplexPipe(PipeReader input, PipeWriter output) : IDuplexPipe
    {
        public PipeReader Input { get; } = input;

        public PipeWriter Output { get; } = output;
    }

    /// <summary>Forwards everything to the TLS writer, asking it for record-sized memory when a new buffer is due.</summary>
    internal sealed class RecordSizedWriter(PipeWriter inner) : PipeWriter
    {
        /// <summary>RFC 8446 5.1: 2^14 bytes of plaintext per record.</summary>
        public const int RecordSize = 16 * 1024;

        // What is left of the memory the inner writer last handed out; 0 when it must hand out new memory.
        private int _available;

        public override bool CanGetUnflushedBytes => inner.CanGetUnflushedBytes;

        public override long UnflushedBytes => inner.UnflushedBytes;

        public override void Advance(int bytes)
        {
            inner.Advance(bytes);
            _available = Math.Max(0, _available - bytes);
        }

        public override Memory<byte> GetMemory(int sizeHint = 0)
        {
            Memory<byte> memory = inner.GetMemory(NextHint(sizeHint));
            _available = memory.Length;
            return memory;
        }

        public override Span<byte> GetSpan(int sizeHint = 0)
        {
            Span<byte> span = inner.GetSpan(NextHint(sizeHint));
            _available = span.Length;
            return span;
        }

        // Where the inner writer would start a new buffer anyway (nothing left, or not enough), make it a whole record;
        // otherwise pass the hint through so the current buffer is filled first.
        private int NextHint(int sizeHint) => _available == 0 || sizeHint > _available ? Math.Max(sizeHint, RecordSize) : sizeHint;

        public override ValueTask<FlushResult> FlushAsync(CancellationToken cancellationToken = default)
        {
            // A flush hands every buffer to the stream; the next write starts a new one.
            _available = 0;
            return inner.FlushAsync(cancellationToken);
        }

        public override ValueTask<FlushResult> WriteAsync(ReadOnlyMemory<byte> source, CancellationToken cancellationToken = default)
        {
            this.Write(source.Span);
            return FlushAsync(cancellationToken);
        }

        public override void CancelPendingFlush() => inner.CancelPendingFlush();

        public override void Complete(Exception? exception = null) => inner.Complete(exception);

        public override ValueTask CompleteAsync(Exception? exception = null) => inner.CompleteAsync(exception);
    }
}
