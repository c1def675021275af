using System.Diagnostics.Metrics;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// The zero-copy send path on a Unix domain socket endpoint (the usual reverse-proxy setup): sendfile works there, but
/// the kernel gives no TCP_INFO to tell what the peer has read, so a wait for socket room cannot be looked at again.
/// Each wait asked for the rest of the file and got the time that takes at the minimum rate: a client that stopped
/// reading a 100 MiB body held its connection, socket and file for about 27 minutes at 64 KiB/s (days at Kestrel's
/// default 240 B/s), where Kestrel alone cuts it off after seconds.
/// </summary>
public sealed class UnixSocketSendPathTests : IDisposable
{
    private readonly TestFiles _files = new();
    private readonly string _socketPath = Path.Combine(Path.GetTempPath(), $"ff-{Guid.NewGuid():N}.sock");

    public void Dispose()
    {
        _files.Dispose();
        File.Delete(_socketPath);
    }

    private async Task<WebApplication> StartAsync()
    {
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles(o => o.EnableFileCache = false);
        builder.WebHost.ConfigureKestrel(k =>
        {
            k.Limits.MinResponseDataRate = new MinDataRate(64 * 1024, TimeSpan.FromSeconds(2));
            k.ListenUnixSocket(_socketPath, l => l.UseZeroCopySendFile());
        });
        WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true });
        await app.StartAsync();
        return app;
    }

    private async Task<NetworkStream> RequestAsync(string target)
    {
        var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified) { ReceiveBufferSize = 16 * 1024 };
        await socket.ConnectAsync(new UnixDomainSocketEndPoint(_socketPath));
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET {target} HTTP/1.1\r\nHost: localhost\r\n\r\n"));
        return new NetworkStream(socket, ownsSocket: true);
    }

    [Fact]
    public async Task Bodies_are_sent_whole_with_sendfile_on_a_unix_socket()
    {
        byte[] content = _files.Create("big.bin", 3 * 1024 * 1024 + 3);
        File.SetLastWriteTimeUtc(_files.PathOf("big.bin"), DateTime.UtcNow.AddMinutes(-5));
        await using WebApplication app = await StartAsync();
        using var sendfile = new InstrumentRecorder(app.Services.GetRequiredService<IMeterFactory>(), "fastfiles.send_path.bytes", new("fastfiles.send_path.method", "sendfile"));
        await using NetworkStream stream = await RequestAsync("/big.bin");
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        (int status, Dictionary<string, string> headers, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
        Assert.Equal(200, status);
        Assert.Equal(content.Length.ToString(System.Globalization.CultureInfo.InvariantCulture), headers["Content-Length"]);
        var body = new MemoryStream();
        body.Write(leftover);
        var buffer = new byte[64 * 1024];
        while (body.Length < content.Length)
        {
            int read = await stream.ReadAsync(buffer, timeout.Token);
            Assert.True(read > 0, "the connection closed");
            body.Write(buffer, 0, read);
        }

        Assert.Equal(content, body.ToArray());
        Assert.True(await Poll.UntilAsync(() => sendfile.Total, content.Length) >= content.Length - 64 * 1024);
        await app.StopAsync();
    }

    [Fact]
    public async Task A_client_that_stops_reading_is_cut_off_on_a_unix_socket()
    {
        _files.Create("huge.bin", 100 * 1024 * 1024);
        File.SetLastWriteTimeUtc(_files.PathOf("huge.bin"), DateTime.UtcNow.AddMinutes(-5));
        await using WebApplication app = await StartAsync();
        using var aborts = new InstrumentRecorder(app.Services.GetRequiredService<IMeterFactory>(), "fastfiles.send_path.fallbacks", new("fastfiles.send_path.reason", "data_rate_abort"));
        await using NetworkStream stream = await RequestAsync("/huge.bin");
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(90));
        (int status, _, _) = await RawHttp.ReadHeadAsync(stream, timeout.Token);
        Assert.Equal(200, status);

        // Read nothing more; the server must give up on this client (at 64 KiB/s, within seconds of the socket filling),
        // never wait for the whole file's time at the rate (1,600 s). The wait here is only a bound for a hung test.
        Assert.Equal(1, await Poll.EventuallyAsync(() => Task.FromResult(aborts.Total), total => total >= 1, TimeSpan.FromSeconds(80)));
        await app.StopAsync();
    }
}
