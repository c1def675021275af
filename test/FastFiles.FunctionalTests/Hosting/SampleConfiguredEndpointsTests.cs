using System.Text;
using System.Text.RegularExpressions;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Hosting;

/// <summary>
/// The sample as shipped with its endpoints from <c>Kestrel:Endpoints</c> (as a deployment, and eng/reliability.sh, set
/// them) instead of its own URLs: the static lane on both endpoints, the zero-copy send path on the plaintext one.
/// </summary>
public sealed class SampleConfiguredEndpointsTests
{
    [Fact]
    public async Task Sample_with_configured_endpoints_has_the_lane_on_both_and_the_send_path_on_plaintext()
    {
        using var files = new TestFiles();
        byte[] big = new byte[256 * 1024];
        Random.Shared.NextBytes(big);
        files.Write("www/big.bin", big);
        files.Write("www/small.txt", Encoding.ASCII.GetBytes("hello"));
        await using SampleProcess sample = await SampleProcess.StartAsync(files.PathOf("www"), environment: new Dictionary<string, string>
        {
            ["Kestrel__Endpoints__Plain__Url"] = "http://127.0.0.1:0",
            ["Kestrel__Endpoints__Secure__Url"] = "https://127.0.0.1:0",
            // Lane and send path events are Debug.
            ["Logging__LogLevel__FastFiles"] = "Debug",
        });

        Assert.Equal(200, (await RawHttp.SendAsync(sample.Http, "/small.txt")).Status);

        // The lane hands multi-range requests to Kestrel; the app's multipart body of a file read from disk then goes to the
        // send path, which copies parts this short (below_minimum, event 4007): an endpoint without it logs nothing.
        RawResponse ranges = await RawHttp.SendAsync(sample.Http, "/big.bin", extraHeaders: "Range: bytes=0-9,100-109\r\n");
        Assert.Equal(206, ranges.Status);

        // The lane names its endpoint as Kestrel builds it, before a port 0 is bound.
        string[] expected =
        [
            @"Endpoint http://127\.0\.0\.1:\d+: static lane on",
            @"Endpoint https://127\.0\.0\.1:\d+: static lane on",
            "copied instead of sent with sendfile: below_minimum",
        ];

        // The console logger writes asynchronously: wait for the lines, bounded.
        for (int i = 0; i < 100 && !expected.All(e => sample.Output.Any(l => Regex.IsMatch(l, e))); i++)
        {
            await Task.Delay(100);
        }

        foreach (string pattern in expected)
        {
            Assert.True(sample.Output.Any(l => Regex.IsMatch(l, pattern)), $"'{pattern}' not in the sample's output:\n{string.Join('\n', sample.Output)}");
        }

        // No FastFiles warning (an endpoint its parts missed); Kestrel's own says the configured endpoints override --urls.
        Assert.DoesNotContain(sample.Output, l => l.StartsWith("warn: FastFiles", StringComparison.Ordinal) || l.StartsWith("fail:", StringComparison.Ordinal));
    }
}
