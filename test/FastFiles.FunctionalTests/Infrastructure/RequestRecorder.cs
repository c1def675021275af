using System.Collections.Concurrent;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>What the outermost middleware saw when a request finished.</summary>
public sealed record RequestRecord(string Path, int Status, bool Aborted, Exception? Exception);

/// <summary>
/// The outermost middleware of a test host: records, per request, whether an exception escaped the pipeline and
/// whether the request ended aborted. Requests are correlated by their <c>id</c> query value.
/// </summary>
public sealed class RequestRecorder
{
    private readonly ConcurrentDictionary<string, TaskCompletionSource<RequestRecord>> _records = new();

    public ConcurrentQueue<Exception> Exceptions { get; } = new();

    public void Install(IApplicationBuilder app) => app.Use(async (context, next) =>
    {
        string? id = context.Request.Query["id"];
        Exception? escaped = null;
        try
        {
            await next(context);
        }
        catch (Exception ex)
        {
            escaped = ex;
            Exceptions.Enqueue(ex);
            throw;
        }
        finally
        {
            if (id is not null)
            {
                bool aborted = context.RequestAborted.IsCancellationRequested;
                if (!aborted && context.Request.Query.ContainsKey("awaitabort"))
                {
                    // Kestrel signals RequestAborted from the thread pool, so an abort issued just before the
                    // pipeline returned may not be visible yet: wait for it (bounded) before the context is recycled.
                    try
                    {
                        await Task.Delay(TimeSpan.FromSeconds(10), context.RequestAborted);
                    }
                    catch (OperationCanceledException)
                    {
                        aborted = true;
                    }
                }

                Slot(id).TrySetResult(new RequestRecord(context.Request.Path, context.Response.StatusCode, aborted, escaped));
            }
        }
    });

    /// <summary>Waits (bounded) for the request tagged <paramref name="id"/> to leave the pipeline.</summary>
    public Task<RequestRecord> WaitAsync(string id) => Slot(id).Task.WaitAsync(TimeSpan.FromSeconds(30));

    private TaskCompletionSource<RequestRecord> Slot(string id)
        => _records.GetOrAdd(id, _ => new TaskCompletionSource<RequestRecord>(TaskCreationOptions.RunContinuationsAsynchronously));
}
