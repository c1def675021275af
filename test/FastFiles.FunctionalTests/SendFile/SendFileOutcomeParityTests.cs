using System.Collections.Concurrent;
using System.Globalization;
using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;

namespace FastFiles.FunctionalTests.SendFile;

/// <summary>UseFastSendFile's SendFileAsync against Kestrel's own for the same app code: status, length, body and the exception the app sees.</summary>
public sealed class SendFileOutcomeParityTests : IAsyncLifetime
{
    private const int Length = 100_000;
    private readonly TestFiles _files = new();
    private readonly ConcurrentDictionary<string, string> _outcomes = new();
    private TestHost _host = null!;

    public async Task InitializeAsync()
    {
        _files.Create("data.bin", Length);
        Directory.CreateDirectory(_files.PathOf("adir"));
        _host = await TestHost.StartAsync(app =>
        {
            app.Map("/fast", b => { b.UseFastSendFile(); b.Run(Handler); });
            app.Map("/stock", b => b.Run(Handler));
        });
    }

    public async Task DisposeAsync()
    {
        await _host.DisposeAsync();
        _files.Dispose();
    }

    private async Task Handler(HttpContext context)
    {
        string scenario = context.Request.Query["s"].ToString();
        string id = context.Request.Query["id"].ToString();
        string file = _files.PathOf("data.bin");
        try
        {
            switch (scenario)
            {
                case "whole":
                    await context.Response.SendFileAsync(file, 0, null);
                    break;
                case "dir":
                    await context.Response.SendFileAsync(_files.PathOf("adir"), 0, null);
                    break;
                case "cl-small":
                    context.Response.ContentLength = 10;
                    await context.Response.SendFileAsync(file, 0, null);
                    break;
                case "mixed":
                    await context.Response.BodyWriter.WriteAsync(Encoding.ASCII.GetBytes("A"));
                    await context.Response.SendFileAsync(file, 0, 10);
                    await context.Response.Body.WriteAsync(Encoding.ASCII.GetBytes("B"));
                    break;
                case "cancelled-before":
                    await context.Response.SendFileAsync(file, 0, null, new CancellationToken(canceled: true));
                    break;
                case "count0":
                    await context.Response.SendFileAsync(file, 5, 0);
                    break;
                case "nul":
                    // Named as an app's check might see it (a .pdf), naming data.bin to open(2).
                    await context.Response.SendFileAsync(file + "\0.pdf", 0, null);
                    break;
                case "procfs":
                    // Its size says 0 bytes; it holds more.
                    await context.Response.SendFileAsync("/proc/version", 0, null);
                    break;
                case "sysfs":
                    // Its size says 4096 bytes; it holds a few.
                    await context.Response.SendFileAsync("/sys/class/net/lo/mtu", 0, null);
                    break;
            }

            _outcomes[id] = "ok:started=" + context.Response.HasStarted;
        }
        catch (Exception ex)
        {
            _outcomes[id] = ex.GetType().Name + ":started=" + context.Response.HasStarted;
            if (!context.Response.HasStarted)
            {
                context.Response.StatusCode = 299;
            }
        }
    }

    private async Task<string> RunAsync(Transport transport, string prefix, string scenario, HttpMethod? method = null)
    {
        string id = Guid.NewGuid().ToString("N");
        string status;
        string body;
        try
        {
            using HttpResponseMessage response = await _host.SendAsync(transport, $"/{prefix}?s={scenario}&id={id}", method: method);
            byte[] bytes = await response.Content.ReadAsByteArrayAsync();
            status = ((int)response.StatusCode).ToString(CultureInfo.InvariantCulture)
                + " cl=" + response.Content.Headers.ContentLength?.ToString(CultureInfo.InvariantCulture);
            body = bytes.Length.ToString(CultureInfo.InvariantCulture) + (bytes.Length is > 0 and < 20 ? ":" + Encoding.ASCII.GetString(bytes) : "");
        }
        catch (HttpRequestException ex)
        {
            status = "failed:" + ex.HttpRequestError;
            body = "";
        }

        await Poll.UntilAsync(() => _outcomes.ContainsKey(id) ? 1 : 0, 1);
        return $"{status} body={body} app={_outcomes[id]}";
    }

    [Theory]
    [InlineData(Transport.Http11, "whole", "HEAD")]
    [InlineData(Transport.H2c, "whole", "HEAD")]
    [InlineData(Transport.Http11, "dir", "GET")]
    [InlineData(Transport.Http11, "cl-small", "GET")]
    [InlineData(Transport.H2c, "cl-small", "GET")]
    [InlineData(Transport.Http11, "mixed", "GET")]
    [InlineData(Transport.H2c, "mixed", "GET")]
    [InlineData(Transport.Http11, "cancelled-before", "GET")]
    [InlineData(Transport.Http11, "count0", "GET")]
    [InlineData(Transport.H2c, "count0", "GET")]
    [InlineData(Transport.Http11, "nul", "GET")]
    [InlineData(Transport.Http11, "procfs", "GET")]
    [InlineData(Transport.H2c, "procfs", "GET")]
    [InlineData(Transport.Http11, "sysfs", "GET")]
    [InlineData(Transport.H2c, "sysfs", "GET")]
    public async Task Same_outcome_as_kestrels_own_SendFileAsync(Transport transport, string scenario, string method)
    {
        string stock = await RunAsync(transport, "stock", scenario, new HttpMethod(method));
        string fast = await RunAsync(transport, "fast", scenario, new HttpMethod(method));
        Assert.Equal(stock, fast);
    }
}
