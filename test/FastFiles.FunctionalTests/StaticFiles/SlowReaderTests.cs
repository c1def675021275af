using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// A client reading far above Kestrel's minimum response data rate must keep its download, however the body reaches
/// the pipe. The grace period is shortened to two seconds (Kestrel's minimum) so a flush whose bytes Kestrel did not count (it then allows
/// only the grace period) shows up within seconds; the reader's pace is 16x the minimum rate.
/// </summary>
public sealed class SlowReaderTests(SlowReaderTests.Fixture fixture) : IClassFixture<SlowReaderTests.Fixture>
{
    private const int MinRate = 1024;
    private const int ReaderRate = 16 * 1024;
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {
        public RequestRecorder Recorder { get; } = new();

        public byte[] Big { get; private set; } = [];

        public byte[] Cached { get; private set; } = [];

        protected override async Task<TestHost> StartHostAsync()
        {
            Big = Files.Create("big.bin", 8 * 1024 * 1024);
            // Cached (the limit is raised for it): served from memory in one write, flushed when the response ends.
            Cached = Files.Create("cached.bin", 1024 * 1024);
            return await TestHost.StartAsync(
                app =>
                {
                    Recorder.Install(app);
                    StockOnFast.Map(app, Files.Root);
                    app.Map("/stock", branch => branch.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(Files.Root), ServeUnknownFileTypes = true }));
                    app.MapGet("/result/{name}", (string name) => FastResults.PhysicalFile(Files.PathOf(name)));
                    app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(Files.Root), ServeUnknownFileTypes = true });
                },
                services => services.AddFastFiles(o => o.MaxCachedFileSize = 1024 * 1024),
                configureKestrel: k => k.Limits.MinResponseDataRate = new MinDataRate(MinRate, TimeSpan.FromSeconds(2)));
        }

        protected override Task StoppingAsync()
        {
            Assert.Empty(Recorder.Exceptions);
            return Task.CompletedTask;
        }
    }

    [Fact]
    public async Task Readers_well_above_the_minimum_rate_keep_their_downloads()
    {
        // Side by side: the middleware's file path, the file result, a cached body, FastFiles' SendFileAsync under
        // UseStaticFiles, and stock UseStaticFiles.
        string[] failures = (await Task.WhenAll(
            ReadSlowlyAsync("/big.bin", 256 * 1024),
            ReadSlowlyAsync("/result/big.bin", 256 * 1024),
            ReadSlowlyAsync("/cached.bin", 256 * 1024),
            ReadSlowlyAsync("/stock-on-fast/big.bin", 256 * 1024),
            ReadSlowlyAsync("/stock/big.bin", 256 * 1024))).OfType<string>().ToArray();
        Assert.Empty(failures);
    }

    private async Task<string?> ReadSlowlyAsync(string path, int readBytes)
    {
        byte[] expected = path.Contains("cached", StringComparison.Ordinal) ? _f.Cached : _f.Big;
        string id = Guid.NewGuid().ToString("N");
        // A small receive buffer: the server's flushes wait on this reader, as they would on a slow link.
        using Socket socket = await RawHttp.ConnectAsync(_f.Host.Http, receiveBufferSize: 4 * 1024);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET {path}?id={id} HTTP/1.1\r\nHost: x\r\n\r\n"));
        using var stream = new NetworkStream(socket, ownsSocket: false);
        (int status, _, byte[] leftover) = await RawHttp.ReadHeadAsync(stream, CancellationToken.None);
        Assert.Equal(200, status);

        var received = new MemoryStream();
        received.Write(leftover);
        var chunk = new byte[ReaderRate / 8];
        while (received.Length < readBytes)
        {
            // 2 KiB every 125 ms: about 16 KiB/s, whatever the scheduling.
            await Task.Delay(125);
            int read;
            try
            {
                read = await stream.ReadAsync(chunk.AsMemory(0, (int)Math.Min(chunk.Length, readBytes - received.Length)));
            }
            catch (IOException)
            {
                read = 0;
            }

            if (read == 0)
            {
                return $"{path}: the server ended the response after {received.Length} of {readBytes} bytes";
            }

            received.Write(chunk, 0, read);
        }

        return expected.AsSpan(0, readBytes).SequenceEqual(received.ToArray().AsSpan(0, readBytes)) ? null : $"{path}: wrong bytes";
    }
}
