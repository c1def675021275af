using System.Diagnostics.Metrics;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Xunit;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>Checks that an endpoint has the zero-copy send path, by what it serves and how.</summary>
public static class SendPathAssert
{
    /// <summary>GETs <paramref name="path"/>: the body is <paramref name="content"/>, and all of it went by sendfile(2) (<c>fastfiles.send_path.bytes</c>).</summary>
    public static async Task ServedBySendfileAsync(WebApplication app, Uri address, string path, byte[] content)
    {
        using var sendfile = new InstrumentRecorder(app.Services.GetRequiredService<IMeterFactory>(), "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        RawResponse response = await RawHttp.SendAsync(address, path);
        Assert.Equal(content, response.Body);
        Assert.Equal(content.Length, await Poll.UntilAsync(() => sendfile.Total, content.Length));
    }
}
