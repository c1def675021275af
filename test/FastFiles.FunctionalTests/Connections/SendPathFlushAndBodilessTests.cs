using System.IO.Pipelines;
using System.Net.Sockets;
using System.Text;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>The send path against Kestrel's own output (HttpCopy, the control): CancelPendingFlush on a flush waiting for a client that reads nothing, and bodiless answers on a kept connection.</summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathFlushAndBodilessTests
{
    // CancelPendingFlush on a flush that is already waiting for a client that reads nothing: a Pipe completes that flush
    // at once with IsCanceled (PipeWriter contract), so Kestrel's own output returns from it; the app is not left waiting
    // for the client.
    // pipelined: a request waits unexamined behind the response, so the writer hands each flush to its batching send and
    // the flush that finds the socket full waits behind that send rather than on the socket.
    [Theory]
    [InlineData(true, false)]
    [InlineData(false, false)]
    [InlineData(true, true)]
    [InlineData(false, true)]
    public async Task CancelPendingFlush_completes_a_flush_already_waiting_for_the_socket(bool sendPath, bool pipelined)
    {
        var outcome = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
        await using TestHost host = await TestHost.StartAsync(
            app =>
            {
                app.MapGet("/next", () => "x");
                app.MapGet("/endless", async context =>
            {
                byte[] chunk = new byte[pipelined ? 32 * 1024 : 64 * 1024];
                try
                {
                    while (true)
                    {
                        ValueTask<FlushResult> write = context.Response.BodyWriter.WriteAsync(chunk);
                        if (!write.IsCompleted)
                        {
                            // The flush waits for the socket: give up the wait, as an app (or a server) may.
                            context.Response.BodyWriter.CancelPendingFlush();
                            FlushResult result = await write;
                            outcome.TrySetResult(result.IsCanceled ? "canceled" : result.IsCompleted ? "completed" : "done");
                            return;
                        }

                        if ((await write).IsCompleted)
                        {
                            return;
                        }

                        if (pipelined)
                        {
                            // The batching send takes each write before the next.
                            await Task.Delay(10);
                        }
                    }
                }
                catch (Exception ex)
                {
                    outcome.TrySetResult(ex.GetType().Name);
                }
            });
            },
            configureKestrel: k => k.Limits.MinResponseDataRate = null);
        Uri endpoint = sendPath ? host.Http : host.HttpCopy;
        using Socket socket = await RawHttp.ConnectAsync(endpoint, receiveBufferSize: 16 * 1024);
        string request = $"GET /endless HTTP/1.1\r\nHost: {endpoint.Authority}\r\n\r\n";
        await socket.SendAsync(Encoding.ASCII.GetBytes(pipelined ? request + $"GET /next HTTP/1.1\r\nHost: {endpoint.Authority}\r\n\r\n" : request));

        // The client reads nothing: the flush can only end by being canceled. Kestrel's own output ends it at once (its
        // producer reports it as an ordinary flush, "done"); the send path's must end too, not wait for the client.
        string result = await outcome.Task.WaitAsync(TimeSpan.FromSeconds(30)).ContinueWith(t => t.IsCompletedSuccessfully ? t.Result : "still waiting after 30 s");
        Assert.Contains(result, new[] { "canceled", "done" });

        // The client leaves (a reset), so the host stops without waiting for its responses.
        socket.LingerState = new LingerOption(true, 0);
        socket.Close();
    }

    // HEAD, 304 and 416 answers carry no body on the send path either: pipelined on one kept connection behind each other
    // and ahead of a full GET, a stray byte would show up in the next status line or body.
    [Theory]
    [InlineData("/fast/")]
    [InlineData("/stock/")]
    [InlineData("/result/")]
    public async Task Head_not_modified_and_unsatisfiable_answers_send_no_body_on_a_kept_connection(string prefix)
    {
        using var files = new TestFiles();
        byte[] content = files.Create("page.bin", 200_000);
        File.SetLastWriteTimeUtc(files.PathOf("page.bin"), DateTime.UtcNow.AddHours(-1));
        string root = files.Root;
        await using TestHost host = await TestHost.StartAsync(
            app =>
            {
                app.UseFastSendFile();
                app.Map("/stock", b => b.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(root) }));
                app.MapMethods("/result/{name}", ["GET", "HEAD"], (string name) => Microsoft.AspNetCore.Http.Results.File(Path.Combine(root, name), "application/octet-stream", enableRangeProcessing: true));
                app.UseFastFiles(new FastStaticFileOptions { RequestPath = "/fast", FileProvider = new PhysicalFileProvider(root) });
            },
            services => services.AddFastFiles(o => o.EnableFileCache = false));
        string target = prefix + "page.bin";
        RawResponse first = await RawHttp.SendAsync(host.Http, target);
        Assert.Equal(content, first.Body);
        // Results.File sends Last-Modified only.
        string conditional = first.Headers.TryGetValue("ETag", out string? etag) ? $"If-None-Match: {etag}" : $"If-Modified-Since: {first.Headers["Last-Modified"]}";

        using Socket socket = await RawHttp.ConnectAsync(host.Http);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        string authority = host.Http.Authority;
        await socket.SendAsync(Encoding.ASCII.GetBytes(
            $"HEAD {target} HTTP/1.1\r\nHost: {authority}\r\n\r\n" +
            $"GET {target} HTTP/1.1\r\nHost: {authority}\r\n{conditional}\r\n\r\n" +
            $"GET {target} HTTP/1.1\r\nHost: {authority}\r\nRange: bytes=900000-\r\n\r\n" +
            $"GET {target} HTTP/1.1\r\nHost: {authority}\r\n\r\n"));
        var reader = new HttpConnectionReader(stream);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var head = await reader.ReadResponseAsync(head: true, cancellationToken: timeout.Token);
        var notModified = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        var unsatisfiable = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        var full = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(200, head.Status);
        Assert.Equal(304, notModified.Status);
        Assert.Equal(416, unsatisfiable.Status);
        Assert.Equal(200, full.Status);
        Assert.Equal(content, full.Body);
        Assert.False(reader.HasBufferedBytes);
    }
}
