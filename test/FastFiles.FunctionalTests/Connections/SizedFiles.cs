using System.Net;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>A folder of random files named <c>f{size}.bin</c>, one per size, and the check that one arrived whole.</summary>
internal sealed class SizedFiles : IDisposable
{
    public SizedFiles(int[] sizes)
    {
        foreach (int size in sizes)
        {
            Contents[size] = Files.Create($"f{size}.bin", size);
        }
    }

    public TestFiles Files { get; } = new();

    public Dictionary<int, byte[]> Contents { get; } = [];

    /// <summary>GETs <c>/f{size}.bin</c> over <paramref name="transport"/>: 200, the transport's HTTP version, the file's bytes.</summary>
    public async Task AssertServedAsync(TestHost host, Transport transport, int size)
    {
        using HttpResponseMessage response = await host.SendAsync(transport, $"/f{size}.bin");
        byte[] body = await response.Content.ReadAsByteArrayAsync();
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(TestHost.VersionFor(transport), response.Version);
        Assert.Equal(TestFiles.Sha256(Contents[size]), TestFiles.Sha256(body));
    }

    public void Dispose() => Files.Dispose();
}
