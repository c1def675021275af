using System.Diagnostics;
using System.Text.Json;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// Runs Node's <c>http2</c> client through framing edge cases (many streams, RST_STREAM, CONTINUATION, PING,
/// SETTINGS, small windows, GOAWAY) against the same app with the stage on and off, and requires identical outcomes.
/// </summary>
public sealed class NodeConformanceTests : IDisposable
{
    private static readonly int[] Sizes = [0, 1, 16384, 16385, 100_000, 1024 * 1024 + 3, 3 * 1024 * 1024];
    private readonly SizedFiles _sized = new(Sizes);

    public NodeConformanceTests()
    {
        _sized.Files.Write("ca.pem", System.Text.Encoding.ASCII.GetBytes(TestCertificate.Instance.ExportCertificatePem()));
    }

    public void Dispose() => _sized.Dispose();

    [Fact]
    public async Task Outcomes_are_the_same_with_the_stage_or_record_coalescing_on_and_with_neither()
    {
        (string on, long staged) = await RunAgainstAsync(stageOn: true);
        (string off, _) = await RunAgainstAsync(stageOn: false);
        (string coalesced, _) = await RunAgainstAsync(stageOn: false, coalesce: true);

        Assert.Equal(off, on);
        Assert.Equal(off, coalesced);
        // Absolute checks too, so a server broken the same way twice still fails.
        using JsonDocument doc = JsonDocument.Parse(on);
        JsonElement root = doc.RootElement;
        foreach (int size in Sizes)
        {
            JsonElement results = root.GetProperty("manyStreams").GetProperty($"/f{size}.bin");
            Assert.Equal(1, results.GetArrayLength());
            Assert.Equal(200, results[0].GetProperty("status").GetInt32());
            Assert.Equal(TestFiles.Sha256(_sized.Contents[size]), results[0].GetProperty("sha256").GetString()!.ToUpperInvariant());
        }

        string largest = TestFiles.Sha256(_sized.Contents[Sizes[^1]]);
        JsonElement rst = root.GetProperty("rstStream");
        Assert.True(rst.GetProperty("sawData").GetBoolean());
        Assert.Equal(8, rst.GetProperty("rstCode").GetInt32());
        Assert.Equal(largest, rst.GetProperty("followUp").GetProperty("sha256").GetString()!.ToUpperInvariant());
        Assert.Equal("20000", root.GetProperty("largeHeaders").GetProperty("requestHeaderEchoed").GetProperty("body").GetString());
        Assert.Equal(30000, root.GetProperty("largeHeaders").GetProperty("responseHeaderLength").GetInt32());
        Assert.Equal("fastfile", root.GetProperty("ping").GetProperty("echoed").GetString());
        Assert.True(root.GetProperty("settingsChange").GetProperty("acked").GetBoolean());
        Assert.Equal(largest, root.GetProperty("settingsChange").GetProperty("sha256").GetString()!.ToUpperInvariant());
        Assert.Equal(largest, root.GetProperty("smallWindows")[0].GetProperty("sha256").GetString()!.ToUpperInvariant());
        Assert.Equal(largest, root.GetProperty("clientGoAway").GetProperty("sha256").GetString()!.ToUpperInvariant());
        Assert.True(root.GetProperty("clientGoAway").GetProperty("sessionClosed").GetBoolean());
        Assert.Equal(7, staged);
    }

    private async Task<(string Output, long Staged)> RunAgainstAsync(bool stageOn, bool coalesce = false)
    {
        var probe = new ServerProbe();
        Http2TlsOutputStageOptions? stage = null;
        TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, probe),
            configureTls: l =>
            {
                if (coalesce)
                {
                    l.UseTlsRecordCoalescing();
                }

                if (stageOn)
                {
                    l.UseHttp2TlsOutputStage(o => stage = o);
                }
            });
        await using TestHost _ = host;

        var start = new ProcessStartInfo("node")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        start.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "Connections", "h2conformance.js"));
        start.ArgumentList.Add(host.Https.ToString().TrimEnd('/'));
        start.ArgumentList.Add(_sized.Files.PathOf("ca.pem"));
        foreach (int size in Sizes)
        {
            start.ArgumentList.Add($"/f{size}.bin");
        }

        using Process node = Process.Start(start)!;
        Task<string> stdout = node.StandardOutput.ReadToEndAsync();
        Task<string> stderr = node.StandardError.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(120));
        try
        {
            await node.WaitForExitAsync(cts.Token);
        }
        catch (OperationCanceledException)
        {
            node.Kill(entireProcessTree: true);
            throw;
        }

        Assert.True(node.ExitCode == 0, await stderr);
        return (await stdout, stage?.Statistics.ConnectionsStaged ?? 0);
    }
}
