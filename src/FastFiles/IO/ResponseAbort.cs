using Microsoft.AspNetCore.Http.Features;

namespace FastFiles.IO;

/// <summary>Aborts a response whose body cannot be completed, and returns only once the server has registered it.</summary>
/// <remarks>
/// When a client goes away, Kestrel first completes the response's output (our flush sees it) and only then, possibly on
/// another thread, marks the request aborted. An app that returns in between has left a short body on a request Kestrel
/// still thinks is alive, and Kestrel logs it at Error as "Response Content-Length mismatch: too few bytes written"
/// (seen twice in the reliability suite's resets: HTTP/2 streams reset mid-body). Our own abort is then a no-op (the
/// stream or connection is already aborting), so we wait, bounded, for the request-aborted signal, which Kestrel raises
/// after it has marked the request.
/// </remarks>
internal static class ResponseAbort
{
    // The gap is the other thread's next few instructions; the bound only matters if an app replaced the token.
    private static readonly TimeSpan ObserveTimeout = TimeSpan.FromSeconds(2);

    public static Task AbortAsync(IHttpRequestLifetimeFeature lifetime)
    {
        lifetime.Abort();
        CancellationToken aborted = lifetime.RequestAborted;
        return aborted.IsCancellationRequested ? Task.CompletedTask : ObserveAsync(aborted);
    }

    private static async Task ObserveAsync(CancellationToken aborted)
    {
        try
        {
            await Task.Delay(ObserveTimeout, aborted);
        }
        catch (OperationCanceledException)
        {
        }
    }
}
