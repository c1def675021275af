using System.Net.Sockets;
using System.Security.Cryptography;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.IO;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// Many large bodies at once on the HTTP/1.1 copy path: past a bound per core they are read in Kestrel-block reads
/// instead of 64 KiB ones (so ArrayPool does not run dry). Every body stays whole, and the count of large readers
/// returns to zero whether the responses complete or the clients leave mid-body; a count that leaked would push every
/// later body to small reads.
/// </summary>
[Collection(LargeReadersCollection.Name)]
public sealed class ConcurrentLargeBodyTests
{
    private const int Length = (1024 * 1024) + 5;

    [Fact]
    public async Task Bodies_stay_whole_and_the_large_reader_count_returns_to_zero()
    {
        using var files = new TestFiles();
        byte[] content = files.Create("big.bin", Length);
        byte[] expected = SHA256.HashData(content);
        TestHost host = await TestHost.StartAsync(app =>
            app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(files.Root), ServeUnknownFileTypes = true }));
        try
        {
            // More than the bound on any machine with up to 8 cores (12 per core), all at once; a third leave mid-body.
            int clients = Math.Max(100, (12 * Environment.ProcessorCount) + 4);
            Task[] downloads = Enumerable.Range(0, clients).Select(i => i % 3 == 0
                ? ResetMidBodyAsync(host.HttpCopy)
                : DownloadAsync(host.HttpCopy, expected)).ToArray();
            await Task.WhenAll(downloads);

            DateTime deadline = DateTime.UtcNow + TimeSpan.FromSeconds(30);
            while (FileBodyWriter.LargeReaders != 0 && DateTime.UtcNow < deadline)
            {
                await Task.Delay(10);
            }

            Assert.Equal(0, FileBodyWriter.LargeReaders);

            // And the next body is whole too.
            await DownloadAsync(host.HttpCopy, expected);
        }
        finally
        {
            await host.DisposeAsync();
        }

        await ResponseHeaders.AssertNoOpenFilesUnderAsync(files.Root);
    }

    private static async Task DownloadAsync(Uri address, byte[] expectedHash)
    {
        using Socket socket = await RawHttp.ConnectAsync(address);
        using var stream = new NetworkStream(socket, ownsSocket: false);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /big.bin HTTP/1.1\r\nHost: {address.Authority}\r\n\r\n"));
        var reader = new Connections.HttpConnectionReader(stream);
        var response = await reader.ReadResponseAsync(cancellationToken: timeout.Token);
        Assert.Equal(200, response.Status);
        Assert.Equal(expectedHash, SHA256.HashData(response.Body));
    }

    private static async Task ResetMidBodyAsync(Uri address)
    {
        using Socket socket = await RawHttp.ConnectAsync(address, receiveBufferSize: 16 * 1024);
        await socket.SendAsync(Encoding.ASCII.GetBytes($"GET /big.bin HTTP/1.1\r\nHost: {address.Authority}\r\n\r\n"));
        var chunk = new byte[16 * 1024];
        int got = 0;
        int read = 1;
        while (got < 100_000 && read > 0)
        {
            read = await socket.ReceiveAsync(chunk);
            got += read;
        }

        socket.LingerState = new LingerOption(true, 0);
        socket.Close();
    }
}

/// <summary>The large-reader count is process-wide, so this class runs alone.</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class LargeReadersCollection
{
    public const string Name = "Large readers";
}
