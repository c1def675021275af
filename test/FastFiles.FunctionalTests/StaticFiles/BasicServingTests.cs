using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

public sealed class BasicServingTests : IAsyncLifetime
{
    private static readonly int[] Sizes = [0, 1, 4095, 4096, 4097, 65535, 65536, 65537, 3 * 1024 * 1024 + 17];
    private readonly TestFiles _files = new();
    private readonly Dictionary<int, byte[]> _contents = [];
    private TestHost _host = null!;

    public async Task InitializeAsync()
    {
        foreach (int size in Sizes)
        {
            _contents[size] = _files.Create($"f{size}.bin", size);
        }

        _host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(_files.Root),
            ServeUnknownFileTypes = true,
            DefaultContentType = "application/octet-stream",
        }));
    }

    public async Task DisposeAsync()
    {
        await _host.DisposeAsync();
        await ResponseHeaders.AssertNoOpenFilesUnderAsync(_files.Root);
        _files.Dispose();
    }

    public static TheoryData<Transport, int> Cases()
    {
        var data = new TheoryData<Transport, int>();
        foreach (Transport t in TransportMatrix.All)
        {
            foreach (int size in Sizes)
            {
                data.Add(t, size);
            }
        }

        return data;
    }

    [Theory]
    [MemberData(nameof(Cases))]
    public async Task Get_returns_exact_bytes_and_headers(Transport transport, int size)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, $"/f{size}.bin");
        byte[] body = await response.Content.ReadAsByteArrayAsync();

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(TestHost.VersionFor(transport), response.Version);
        Assert.Equal(size, response.Content.Headers.ContentLength);
        Assert.Equal(TestFiles.Sha256(_contents[size]), TestFiles.Sha256(body));
        Assert.Equal("bytes", Assert.Single(response.Headers.AcceptRanges));
        Assert.NotNull(response.Headers.ETag);
        Assert.False(response.Headers.ETag!.IsWeak);
        Assert.NotNull(response.Content.Headers.LastModified);
        Assert.Equal("application/octet-stream", response.Content.Headers.ContentType!.MediaType);
    }
}
