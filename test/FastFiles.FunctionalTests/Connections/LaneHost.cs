using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Text;
using System.Text.RegularExpressions;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// One app, one <c>UseFastFiles</c> root, four endpoints: HTTP/1.1 without and with the static lane, and TLS
/// (HTTP/1.1 and HTTP/2) without and with it. The app counts the requests that reach it and answers what
/// UseFastFiles passes on with an echo of the method, path and body, so hand-offs are visible.
/// </summary>
public sealed partial class LaneHost : IAsyncDisposable
{
    private readonly WebApplication _app;
    private long _appRequests;

    private LaneHost(WebApplication app, Uri[] addresses)
    {
        _app = app;
        Plain = addresses[0];
        Lane = addresses[1];
        Tls = addresses[2];
        LaneTls = addresses[3];
    }

    public Uri Plain { get; }

    public Uri Lane { get; }

    public Uri Tls { get; }

    public Uri LaneTls { get; }

    public IServiceProvider Services => _app.Services;

    /// <summary>Requests that reached the app's middleware (the lane's never do).</summary>
    public long AppRequests => Interlocked.Read(ref _appRequests);

    public static FastStaticFileOptions FilesFor(string root) => new()
    {
        FileProvider = new PhysicalFileProvider(root),
        CacheControl = "public, max-age=60",
    };

    /// <param name="root">The folder served by the app and the lane.</param>
    /// <param name="kestrel">Server options (limits).</param>
    /// <param name="files">The root's options, for the app and the lane alike.</param>
    /// <param name="plainLane">Connection middlewares put outside the lane on the plaintext lane endpoint (the send path).</param>
    /// <param name="settings">Configuration for the app (for example <c>AllowedHosts</c>).</param>
    /// <param name="oneOptionsObject">
    /// One options object for the app and both lanes, so all three share one file cache; otherwise each has its own.
    /// </param>
    public static async Task<LaneHost> StartAsync(
        string root, Action<KestrelServerOptions>? kestrel = null, Func<string, FastStaticFileOptions>? files = null, Action<ListenOptions>? plainLane = null,
        IEnumerable<KeyValuePair<string, string?>>? settings = null, bool oneOptionsObject = false)
    {
        files ??= FilesFor;
        if (oneOptionsObject)
        {
            FastStaticFileOptions one = files(root);
            files = _ => one;
        }

        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        if (settings is not null)
        {
            builder.Configuration.AddInMemoryCollection(settings);
        }

        builder.Logging.SetMinimumLevel(LogLevel.Warning);
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k =>
        {
            kestrel?.Invoke(k);
            void Lane(StaticLaneOptions o) => o.Roots.Add(new StaticLaneRootOptions { PhysicalPath = root, Files = files(root) });
            k.Listen(IPAddress.Loopback, 0, l => l.Protocols = HttpProtocols.Http1);
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1;
                plainLane?.Invoke(l);
                l.UseStaticLane(Lane);
            });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1AndHttp2;
                l.UseHttps(TestCertificate.Instance);
            });
            k.Listen(IPAddress.Loopback, 0, l =>
            {
                l.Protocols = HttpProtocols.Http1AndHttp2;
                l.UseHttps(TestCertificate.Instance).UseStaticLane(Lane);
            });
        });
        WebApplication app = builder.Build();
        LaneHost? host = null;
        app.Use((context, next) =>
        {
            Interlocked.Increment(ref host!._appRequests);
            return next(context);
        });
        app.UseFastFiles(files(root));
        app.Run(async context =>
        {
            using var body = new MemoryStream();
            await context.Request.Body.CopyToAsync(body);
            context.Response.StatusCode = StatusCodes.Status404NotFound;
            await context.Response.WriteAsync($"app {context.Request.Method} {context.Request.Path}{context.Request.QueryString} body={body.Length}");
        });
        await app.StartAsync();
        Uri[] addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.Select(a => new Uri(a)).ToArray();
        host = new LaneHost(app, addresses);
        return host;
    }

    /// <summary>One HTTP/1.1 request without a body, Host: localhost, with <paramref name="headers"/> (CRLF-terminated lines).</summary>
    public static string Request(string method, string target, string headers = "") => $"{method} {target} HTTP/1.1\r\nHost: localhost\r\n{headers}\r\n";

    /// <summary>Opens a connection (TLS with ALPN http/1.1 for the TLS endpoints).</summary>
    public static async Task<(Socket Socket, Stream Stream)> ConnectAsync(Uri endpoint)
    {
        Socket socket = await RawHttp.ConnectAsync(endpoint);
        Stream stream = new NetworkStream(socket, ownsSocket: false);
        if (endpoint.Scheme == "https")
        {
            var ssl = new SslStream(stream, leaveInnerStreamOpen: false, (_, _, _, _) => true);
            await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
            {
                TargetHost = "localhost",
                ApplicationProtocols = [SslApplicationProtocol.Http11],
            });
            stream = ssl;
        }

        return (socket, stream);
    }

    /// <summary>
    /// Sends <paramref name="chunks"/> one write each (a pause between them, so the server usually reads them apart)
    /// and reads until the server closes the connection or <paramref name="quiet"/> passes without a byte.
    /// </summary>
    public static async Task<byte[]> ExchangeAsync(Uri endpoint, IReadOnlyList<byte[]> chunks, TimeSpan? quiet = null)
    {
        (Socket socket, Stream stream) = await ConnectAsync(endpoint);
        using (socket)
        await using (stream)
        {
            var received = new MemoryStream();
            Task reading = ReadUntilQuietAsync(stream, received, quiet ?? TimeSpan.FromSeconds(10));
            try
            {
                for (int i = 0; i < chunks.Count; i++)
                {
                    await stream.WriteAsync(chunks[i]);
                    await stream.FlushAsync();
                    if (i + 1 < chunks.Count)
                    {
                        await Task.Delay(1);
                    }
                }
            }
            catch (IOException)
            {
                // The server may close early (a 400): what it sent is the answer.
            }

            await reading;
            return received.ToArray();
        }
    }

    private static async Task ReadUntilQuietAsync(Stream stream, MemoryStream into, TimeSpan quiet)
    {
        var chunk = new byte[64 * 1024];
        try
        {
            while (true)
            {
                using var timeout = new CancellationTokenSource(quiet);
                int read = await stream.ReadAsync(chunk, timeout.Token);
                if (read == 0)
                {
                    return;
                }

                into.Write(chunk, 0, read);
            }
        }
        catch (Exception ex) when (ex is IOException or OperationCanceledException)
        {
            // A reset or a quiet connection ends the exchange.
        }
    }

    /// <summary>
    /// Graceful shutdown while a request is arriving: sends <paramref name="first"/> to the endpoint without the lane and
    /// to the lane's, begins <see cref="StopAsync"/> once both servers have read it, sends <paramref name="rest"/>, and
    /// returns what each answered until it closed (Date blanked), once the host has stopped.
    /// </summary>
    public async Task<(string Kestrel, string Lane)> ExchangeAcrossShutdownAsync(string first, string rest)
    {
        var connections = new List<(Socket Socket, Stream Stream)> { await ConnectAsync(Plain), await ConnectAsync(Lane) };
        foreach ((Socket _, Stream stream) in connections)
        {
            await stream.WriteAsync(Encoding.ASCII.GetBytes(first));
        }

        // Ordering, not timing: the first bytes are in before shutdown begins, the rest after.
        await Task.Delay(300);
        Task stopping = StopAsync();
        await Task.Delay(300);
        var answers = new List<string>();
        foreach ((Socket socket, Stream stream) in connections)
        {
            using (socket)
            await using (stream)
            {
                await stream.WriteAsync(Encoding.ASCII.GetBytes(rest));
                var received = new MemoryStream();
                using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(30));
                await RawHttp.ReadToEndAsync(stream, received, bound.Token);
                answers.Add(WithoutDates(received.ToArray()));
            }
        }

        await stopping.WaitAsync(TimeSpan.FromSeconds(60));
        return (answers[0], answers[1]);
    }

    /// <summary>The bytes with every Date header value blanked (the one field allowed to differ).</summary>
    public static string WithoutDates(byte[] response)
    {
        string text = DateField().Replace(Encoding.Latin1.GetString(response), "Date: *");

        // multipart/byteranges boundaries are random per response.
        foreach (Match boundary in Boundary().Matches(text).ToArray())
        {
            text = text.Replace(boundary.Groups[1].Value, "BOUNDARY", StringComparison.Ordinal);
        }

        return text;
    }

    [GeneratedRegex("boundary=([0-9a-zA-Z]{8,70})")]
    private static partial Regex Boundary();

    [GeneratedRegex(@"Date: [A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT")]
    private static partial Regex DateField();

    public async ValueTask DisposeAsync()
    {
        await _app.StopAsync();
        await _app.DisposeAsync();
    }

    public Task StopAsync() => _app.StopAsync();
}
