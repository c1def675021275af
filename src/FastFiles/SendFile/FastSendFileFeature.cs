using Microsoft.AspNetCore.Builder;
using System.IO.Pipelines;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.IO;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.Extensions.Logging;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.SendFile;

/// <summary>
/// Kestrel's response body with <see cref="SendFileAsync"/> replaced by FastFiles' pipe copy. Everything else
/// forwards to Kestrel. One instance is kept per Kestrel protocol object (they are reused per connection and
/// per pooled HTTP/2 stream), so installing it allocates nothing per request.
/// </summary>
internal sealed class FastSendFileFeature : IHttpResponseBodyFeature, IForwardingResponseBody
{
    private readonly IHttpResponseBodyFeature _inner;
    private readonly IHttpRequestLifetimeFeature _lifetime;
    private readonly FastFilesOptions _options;
    private readonly ILogger _logger;
    private readonly FastFilesMetrics _metrics;

    public FastSendFileFeature(IHttpResponseBodyFeature inner, FastFilesOptions options, ILogger logger, FastFilesMetrics metrics)
    {
        _metrics = metrics;
        _inner = inner;
        _lifetime = (IHttpRequestLifetimeFeature)inner;
        _options = options;
        _logger = logger;
    }

    public IHttpResponseBodyFeature Inner => _inner;

    public Stream Stream => _inner.Stream;

    public PipeWriter Writer => _inner.Writer;

    public void DisableBuffering() => _inner.DisableBuffering();

    public Task StartAsync(CancellationToken cancellationToken = default) => _inner.StartAsync(cancellationToken);

    public Task CompleteAsync() => _inner.CompleteAsync();

    // FileNotFoundException propagates as it does from the stock fallback: UseStaticFiles turns it into a 404. The stock
    // fallback reads FileInfo.Length first, which throws it for a directory too, where opening throws
    // UnauthorizedAccessException.
    private static SafeFileHandle Open(string path, out FileStamp stamp)
    {
        try
        {
            return FileVersion.OpenHandle(path, out stamp);
        }
        catch (UnauthorizedAccessException) when (Directory.Exists(path))
        {
            throw new FileNotFoundException("The path names a directory, not a file.", path);
        }
    }

    public async Task SendFileAsync(string path, long offset, long? count, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        if (path.Contains('\0'))
        {
            // As the stock fallback (FileInfo) refuses it: open(2) would see the path cut at the NUL.
            throw new ArgumentException("Null character in path.", nameof(path));
        }

        // The stamp is the version this body is sent from, read from the descriptor. The caller built its headers from an
        // earlier look at the path; from here on, a write into the file is caught before the body's last bytes leave.
        using SafeFileHandle file = Open(path, out FileStamp stamp);
        long length = stamp.Length;

        // Same contract as the stock SendFileFallback.
        if (offset < 0 || offset > length)
        {
            throw new ArgumentOutOfRangeException(nameof(offset), offset, "The offset must be within the file.");
        }

        if (count.HasValue && (count.Value < 0 || count.Value > length - offset))
        {
            throw new ArgumentOutOfRangeException(nameof(count), count, "The count must fit within the file after the offset.");
        }

        long toSend = count ?? length - offset;
        cancellationToken.ThrowIfCancellationRequested();

        // "To the end" of a file whose size says nothing of its content (procfs reports 0 bytes): the stock fallback
        // reads until end of file, and so does Kestrel's own SendFileAsync, which this one then is.
        if (count is null && length == 0)
        {
            file.Dispose();
            await _inner.SendFileAsync(path, offset, count, cancellationToken);
            return;
        }

        // As the stock fallback: nothing to copy writes nothing, so the response is not started.
        if (toSend == 0)
        {
            return;
        }

        // Kestrel checks Content-Length on each write; ours go through Advance after StartAsync, so its check would
        // fire only once the headers are out (a reset instead of the stock 500). Make the same check before starting.
        var responseFeature = (IHttpResponseFeature)_inner;
        if (!responseFeature.HasStarted && responseFeature.Headers.ContentLength is { } declared && toSend > declared
            && !responseFeature.Headers.ContainsKey("Transfer-Encoding")
            && !Microsoft.AspNetCore.Http.HttpMethods.IsHead(((IHttpRequestFeature)_inner).Method)
            && responseFeature.StatusCode is not (204 or 205 or 304))
        {
            throw new InvalidOperationException($"Response Content-Length mismatch: too many bytes written ({toSend} of {declared}).");
        }

        CancellationToken aborted = _lifetime.RequestAborted;
        using CancellationTokenRegistration link = cancellationToken.CanBeCanceled && cancellationToken != aborted
            ? cancellationToken.UnsafeRegister(static state => ((IHttpRequestLifetimeFeature)state!).Abort(), _lifetime)
            : default;

        FileSendStatus status;
        try
        {
            // Kestrel's HTTP/1.1 rate check does not count advanced bytes: size its grace for one copy batch.
            ResponseDataRate.AllowUncountedFlushes(_inner as IHttpMinResponseDataRateFeature, Math.Min(toSend, FileBodyWriter.FlushThreshold));

            // Start the response first so the headers and the first body bytes leave in one write.
            await _inner.StartAsync(aborted);
            // Kestrel's protocol object is also the request's feature collection (it falls back to the connection's).
            status = await FileBody.WriteAsync(
                (IFeatureCollection)_inner, file, stamp, offset, toSend, ReadSizePolicy.For(_options, ((IHttpRequestFeature)_inner).Protocol), _options.SynchronousReadThreshold, aborted);
        }
        catch (OperationCanceledException) when (aborted.IsCancellationRequested)
        {
            status = FileSendStatus.ClientDisconnected;
        }

        switch (status)
        {
            case FileSendStatus.Completed:
                return;
            case FileSendStatus.Truncated when count is null && responseFeature.Headers.ContentLength is null && stamp.StillMatches(file):
                // "To the end" of a body with no declared length, and the end came sooner than the size said while the
                // file did not change (sysfs reports 4096 bytes for a few): as the stock fallback, which reads until end
                // of file, the body ends there. (A file truncated meanwhile has another stamp: cut short, as below.)
                try
                {
                    if (!(await _inner.Writer.FlushAsync(aborted)).IsCanceled)
                    {
                        return;
                    }
                }
                catch (OperationCanceledException) when (aborted.IsCancellationRequested)
                {
                }

                status = FileSendStatus.ClientDisconnected;
                break;
            case FileSendStatus.Truncated:
                Log.FileTruncated(_logger, path, toSend);
                break;
            case FileSendStatus.Changed:
                Log.FileRewritten(_logger, path, toSend);
                _metrics.RewrittenDuringSend();
                break;
        }

        // The file changed, the caller cancelled (we aborted for it) or the client left: either way the response is cut
        // short, so make sure it cannot look complete.
        await ResponseAbort.AbortAsync(_lifetime);
        if (status == FileSendStatus.ClientDisconnected)
        {
            cancellationToken.ThrowIfCancellationRequested();
            Log.ClientDisconnected(_logger, path);
        }
    }
}
