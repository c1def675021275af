using System.Globalization;

namespace FastFiles.FunctionalTests.Infrastructure;

public static class ResponseHeaders
{
    /// <summary>The raw value of a response or content header (joined with ", "), or null when absent.</summary>
    public static string? Header(this HttpResponseMessage response, string name)
    {
        if (response.Headers.NonValidated.TryGetValues(name, out var values)
            || response.Content.Headers.NonValidated.TryGetValues(name, out values))
        {
            return string.Join(", ", values);
        }

        return null;
    }

    public static string HttpDate(DateTimeOffset date) => date.ToUniversalTime().ToString("r", CultureInfo.InvariantCulture);

    /// <summary>Asserts that no descriptor under <paramref name="root"/> is still open (bounded wait for in-flight closes).</summary>
    public static async Task AssertNoOpenFilesUnderAsync(string root)
        => Assert.Equal(0, await OpenFileDescriptors.WaitForNoneUnderAsync(root, TimeSpan.FromSeconds(10)));
}
