using System.Globalization;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Logging;

namespace FastFiles.Responses;

/// <summary>
/// The answer when a file may exist but cannot be opened because descriptors ran out: 503 with Retry-After
/// (RFC 9110 15.6.4, 10.2.3) and no-store, because a 404 would be cached by browsers and CDNs (issue 10). Files the cache
/// holds in memory keep being served; the rest recover as soon as descriptors are free again.
/// </summary>
internal static class UnavailableResponse
{
    /// <summary>Seconds a client is asked to wait; long enough for a burst of connections to drain.</summary>
    public const int RetryAfterSeconds = 1;

    private static readonly string RetryAfterText = RetryAfterSeconds.ToString(CultureInfo.InvariantCulture);

    // One warning per burst: a burst is over after this long without one.
    private static readonly long QuietTicks = TimeSpan.FromSeconds(10).Ticks;
    private static long s_lastWarningTicks = long.MinValue / 2;
    private static long s_suppressed;

    /// <summary>Answers 503 (the response has not started: every open happens before the headers) and logs once per burst.</summary>
    public static void Send(HttpContext context, ILogger logger, string path, Exception ex)
    {
        HttpResponse response = context.Response;
        response.StatusCode = StatusCodes.Status503ServiceUnavailable;
        response.Headers.RetryAfter = RetryAfterText;
        response.Headers.CacheControl = "no-store";
        response.ContentLength = 0;

        long now = DateTime.UtcNow.Ticks;
        long last = Interlocked.Read(ref s_lastWarningTicks);
        if (now - last >= QuietTicks && Interlocked.CompareExchange(ref s_lastWarningTicks, now, last) == last)
        {
            Log.DescriptorsExhausted(logger, EscapeControls(path), Interlocked.Exchange(ref s_suppressed, 0), ex.Message);
        }
        else
        {
            Interlocked.Increment(ref s_suppressed);
            Log.DescriptorsExhaustedAgain(logger, EscapeControls(path));
        }
    }

    // The path is the request's, decoded (%0D%0A is CR LF): escaped, it cannot start a log line of its own in a text
    // log. Only this event is logged at Warning with a request path; the path itself is untouched.
    private static string EscapeControls(string path)
    {
        if (!path.AsSpan().ContainsAnyInRange('\u0000', '\u001F') && !path.Contains('\u007F'))
        {
            return path;
        }

        var escaped = new System.Text.StringBuilder(path.Length + 16);
        foreach (char c in path)
        {
            if (c < ' ' || c == '\u007F')
            {
                escaped.Append(CultureInfo.InvariantCulture, $"\\x{(int)c:X2}");
            }
            else
            {
                escaped.Append(c);
            }
        }

        return escaped.ToString();
    }
}
