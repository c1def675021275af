using System.Buffers;
using System.IO.Pipelines;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>What the server side of a stage test observed.</summary>
internal sealed class ServerProbe
{
    private long _streamBytesFlushed;
    private int _gatedStarted;

    public long StreamBytesFlushed => Interlocked.Read(ref _streamBytesFlushed);

    public int GatedStarted => Volatile.Read(ref _gatedStarted);

    /// <summary>Set the first time a flush of <c>/stream</c> did not complete synchronously: backpressure reached the app.</summary>
    public TaskCompletionSource FirstBlockedFlush { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Set when a <c>/stream</c> handler has written and flushed its whole body.</summary>
    public TaskCompletionSource StreamCompleted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Set when a <c>/stream</c> response ended before all its bytes were written.</summary>
    public TaskCompletionSource StreamAborted { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public TaskCompletionSource Gate { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public void AddFlushed(long bytes) => Interlocked.Add(ref _streamBytesFlushed, bytes);

    public void OnGatedStarted() => Interlocked.Increment(ref _gatedStarted);
}

/// <summary>The application used by the stage tests: static files plus a few endpoints that misbehave on cue.</summary>
internal static class StageTestApp
{
    public const int ChunkSize = 16 * 1024;

    /// <summary>The body length of <c>/gated</c>: 192 KiB.</summary>
    public const int GatedLength = 192 * 1024;

    /// <summary>1 MiB of deterministic bytes, repeated by <c>/stream</c> and served whole by <c>/gated</c>.</summary>
    public static readonly byte[] Pattern = CreatePattern();

    private static byte[] CreatePattern()
    {
        var bytes = new byte[1024 * 1024];
        new Random(42).NextBytes(bytes);
        return bytes;
    }

    public static Action<WebApplication> Configure(TestFiles files, ServerProbe probe) => app =>
    {
        app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(files.Root),
            ServeUnknownFileTypes = true,
            DefaultContentType = "application/octet-stream",
        });

        app.MapGet("/stream/{length:long}", async (HttpContext context, long length) =>
        {
            context.Response.ContentLength = length;
            PipeWriter writer = context.Response.BodyWriter;
            long written = 0;
            try
            {
                while (written < length)
                {
                    int count = (int)Math.Min(ChunkSize, length - written);
                    int offset = (int)(written % Pattern.Length);
                    count = Math.Min(count, Pattern.Length - offset);
                    writer.Write(Pattern.AsSpan(offset, count));
                    ValueTask<FlushResult> flush = writer.FlushAsync(context.RequestAborted);
                    if (!flush.IsCompleted)
                    {
                        probe.FirstBlockedFlush.TrySetResult();
                    }

                    FlushResult result = await flush;
                    written += count;
                    probe.AddFlushed(count);
                    if (result.IsCompleted || result.IsCanceled)
                    {
                        // The client is gone. Abort as FastFiles' own senders do: an app that returns short of its
                        // Content-Length on a request Kestrel has not yet marked aborted gets Kestrel's Error-level
                        // "too few bytes written" entry, which the reset tests count as a failure.
                        if (written < length)
                        {
                            context.Abort();
                        }

                        break;
                    }
                }
            }
            catch (Exception ex) when (ex is OperationCanceledException or IOException or Microsoft.AspNetCore.Connections.ConnectionResetException)
            {
            }
            finally
            {
                if (written < length)
                {
                    probe.StreamAborted.TrySetResult();
                }
                else
                {
                    probe.StreamCompleted.TrySetResult();
                }
            }
        });

        app.MapGet("/gated", async (HttpContext context) =>
        {
            context.Response.ContentLength = GatedLength;
            await context.Response.Body.WriteAsync(Pattern.AsMemory(0, ChunkSize));
            await context.Response.Body.FlushAsync();
            probe.OnGatedStarted();
            await probe.Gate.Task;
            await context.Response.Body.WriteAsync(Pattern.AsMemory(ChunkSize, GatedLength - ChunkSize));
        });

        app.MapGet("/bigheaders/{length:int}", (HttpContext context, int length) =>
        {
            context.Response.Headers["x-big"] = new string('h', length);
            return "ok";
        });

        app.MapGet("/echo-header", (HttpContext context) => context.Request.Headers["x-big"].ToString().Length.ToString(System.Globalization.CultureInfo.InvariantCulture));
    };
}
