using System.Text;
using Microsoft.Net.Http.Headers;

namespace FastFiles.Http;

/// <summary>
/// The current second as an HTTP-date (RFC 9110 5.6.7), formatted once a second and shared: the Date field the static
/// lane writes, and the one a response sets when the server's cached Date may precede its Last-Modified
/// (<see cref="FileResponsePlan.DateFromClock"/>).
/// </summary>
internal static class HttpDateClock
{
    private static Second s_current = new(0, string.Empty, []);

    /// <summary>The field value, e.g. <c>Sat, 28 Nov 2026 07:33:03 GMT</c>.</summary>
    public static string Current => Now.Value;

    /// <summary>The whole field line, <c>Date: {value}\r\n</c>, as bytes.</summary>
    public static ReadOnlySpan<byte> Line => Now.Line;

    private static Second Now
    {
        get
        {
            long second = DateTime.UtcNow.Ticks / TimeSpan.TicksPerSecond;
            Second current = Volatile.Read(ref s_current);
            if (current.Number != second)
            {
                // A few allocations a second, shared by every connection.
                string value = HeaderUtilities.FormatDate(new DateTimeOffset(second * TimeSpan.TicksPerSecond, TimeSpan.Zero));
                current = new Second(second, value, Encoding.ASCII.GetBytes("Date: " + value + "\r\n"));
                Volatile.Write(ref s_current, current);
            }

            return current;
        }
    }

    private sealed record Second(long Number, string Value, byte[] Line);
}
