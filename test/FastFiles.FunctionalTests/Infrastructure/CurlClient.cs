using System.Diagnostics;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>curl in its own process: a real client, and one whose work the server's allocation counters do not see.</summary>
public static class CurlClient
{
    /// <summary>
    /// Runs <c>curl -sS -k --noproxy *</c> with <paramref name="args"/>, asserts that it exits with 0 (its error output as
    /// the message), and returns what it printed.
    /// </summary>
    public static async Task<string> RunAsync(params string[] args)
    {
        var start = new ProcessStartInfo("curl") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (string arg in new[] { "-sS", "-k", "--noproxy", "*" }.Concat(args))
        {
            start.ArgumentList.Add(arg);
        }

        using Process curl = Process.Start(start)!;
        Task<string> error = curl.StandardError.ReadToEndAsync();
        string output = await curl.StandardOutput.ReadToEndAsync();
        await curl.WaitForExitAsync();
        Assert.True(curl.ExitCode == 0, await error);
        return output;
    }
}
