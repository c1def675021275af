using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// A file body read from disk over TLS with record coalescing (on by default) asks the record writer for 64 KiB at a
/// time. Those buffers come from a pool and go back once written: a 1 MiB response allocates a small fraction of its
/// size, where a fresh array per request cost about 1 MiB. Measured with <see cref="GC.GetTotalAllocatedBytes(bool)"/>
/// around curl (its own process) in the collection that runs alone.
/// </summary>
[Collection(nameof(StaticLaneAllocationTests))]
public sealed class TlsRecordAllocationTests : IDisposable
{
    private const int Length = 1024 * 1024;
    private const int Requests = 20;
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    [Fact]
    public async Task A_body_read_from_disk_over_TLS_allocates_a_small_fraction_of_its_size()
    {
        byte[] content = _files.Create("big.bin", Length);
        WebApplicationBuilder builder = CodeEndpoints.CreateBuilder();
        builder.Services.AddFastFiles();
        builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, 0, l =>
        {
            l.Protocols = HttpProtocols.Http1;
            l.UseHttps(TestCertificate.Instance);
            l.UseTlsRecordCoalescing();
        }));
        await using WebApplication app = builder.Build();
        app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.Root), ServeUnknownFileTypes = true });
        Uri address = (await CodeEndpoints.StartAsync(app))[0];
        string url = new Uri(address, "/big.bin").ToString();

        // Warm-up, then the least of three rounds of the same requests on one connection.
        Assert.Equal(Requests * (long)Length, await CurlAsync(url));
        double perRequest = double.MaxValue;
        for (int round = 0; round < 3; round++)
        {
            long before = GC.GetTotalAllocatedBytes(precise: true);
            Assert.Equal(Requests * (long)Length, await CurlAsync(url));
            perRequest = Math.Min(perRequest, (GC.GetTotalAllocatedBytes(precise: true) - before) / (double)Requests);
        }

        // Kestrel's and SslStream's own work is a few tens of KiB per MiB; a body-sized buffer per request is 1 MiB.
        Assert.True(perRequest < 128 * 1024, $"{perRequest:F0} bytes allocated per 1 MiB response over TLS");
        await app.StopAsync();
    }

    // Fetches url Requests times on one keep-alive connection and returns the bytes received.
    private static async Task<long> CurlAsync(string url)
    {
        var args = new List<string> { "--http1.1", "-w", "%{size_download}\n" };
        for (int i = 0; i < Requests; i++)
        {
            args.AddRange(["-o", "/dev/null", url]);
        }

        string output = await CurlClient.RunAsync([.. args]);
        return output.Split('\n', StringSplitOptions.RemoveEmptyEntries).Sum(long.Parse);
    }
}
