using System.Globalization;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Logging;

namespace FastFiles.StaticFiles;

/// <summary>
/// The process (EMFILE) or the system (ENFILE) is out of file descriptors while opening a file that may well exist.
/// That is a temporary server condition, not a missing file: it is answered 503 with Retry-After (RFC 9110 15.6.4,
/// 10.2.3) and no-store, because a 404 would be cached by browsers and CDNs (issue 10). Files the cache holds in memory
/// keep being served; the rest recover as soon as descriptors are free again.
/// </summary>
internal static class DescriptorExhaustion
{
    /// <summary>Seconds a client is asked to wait; long enough for a burst of connections to drain.</summary>
    public const int RetryAfterSeconds = 1;

    // Linux, macOS and the BSDs report errno in IOException.HResult; Windows reports ERROR_TOO_MANY_OPEN_FILES as an HRESULT.
    private const int Emfile = 24;
    private const int Enfile = 23;
    private const int WindowsTooManyOpenFiles = unchecked((int)0x80070004);

    // One warning per burst: a burst is over after this long without one.
    private static readonly long QuietTicks = TimeSpan.FromSeconds(10).Ticks;
    private static long s_lastWarningTicks = long.MinValue / 2;
    private static long s_suppressed;

    public static bool Is(Exception ex) => ex is IOException { HResult: var code }
        && (OperatingSystem.IsWindows() ? code == WindowsTooManyOpenFiles : code is Emfile or Enfile);

    /// <summary>Answers 503 (the response has not started: every open happens before the headers) and logs once per burst.</summary>
    public static void Respond(HttpContext context, ILogger logger, string path, Exception ex)
    {
        HttpResponse response = context.Response;
        response.StatusCode = StatusCodes.Status503ServiceUnavailable;
        response.Headers.RetryAfter = RetryAfterSecondsText;
        response.Headers.CacheControl = "no-store";
        response.ContentLength = 0;

        long now = DateTime.UtcNow.Ticks;
        long last = Interlocked.Read(ref s_lastWarningTicks);
        if (now - last >= QuietTicks && Interlocked.CompareExchange(ref s_lastWarningTicks, now, last) == last)
        {
            Log.DescriptorsExhausted(logger, path, Interlocked.Exchange(ref s_suppressed, 0), ex.Message);
        }
        else
        {
            Interlocked.Increment(ref s_suppressed);
            Log.DescriptorsExhaustedAgain(logger, path);
        }
    }

    private static readonly string RetryAfterSecondsText = RetryAfterSeconds.ToString(CultureInfo.InvariantCulture);
}
