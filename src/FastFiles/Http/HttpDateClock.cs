using Microsoft.Net.Http.Headers;

namespace FastFiles.Http;

/// <summary>
/// The current time as an HTTP-date (RFC 9110 5.6.7), formatted once a second and shared: for the responses that must
/// not send the server's cached Date (see <see cref="FileResponsePlan.DateFromClock"/>).
/// </summary>
internal static class HttpDateClock
{
    private static Formatted? s_current;

    public static string Current
    {
        get
        {
            long second = DateTime.UtcNow.Ticks / TimeSpan.TicksPerSecond;
            Formatted? current = Volatile.Read(ref s_current);
            if (current is null || current.Second != second)
            {
                current = new Formatted(second, HeaderUtilities.FormatDate(new DateTimeOffset(second * TimeSpan.TicksPerSecond, TimeSpan.Zero)));
                Volatile.Write(ref s_current, current);
            }

            return current.Value;
        }
    }

    private sealed record Formatted(long Second, string Value);
}
