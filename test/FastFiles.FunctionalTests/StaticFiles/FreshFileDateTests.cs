using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// A file served the moment it is written: Kestrel refreshes its Date once a second, so a file written after a second
/// began and before Kestrel's next refresh would be dated a second after Date, which RFC 9110 8.8.2.1 forbids (a
/// client that checks "Date at least a second after Last-Modified" before trusting a date as a strong validator,
/// 8.8.2.2, is then misled). Twenty files written 50 ms apart cover a whole second, so some land in that window.
/// </summary>
public sealed class FreshFileDateTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    [Theory]
    [Transports]
    public async Task A_file_served_as_soon_as_it_is_written_is_never_dated_after_Date(Transport transport)
    {
        await using TestHost host = await TestHost.StartAsync(app => app.UseFastFiles(new FastStaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(_files.Root),
        }));

        var late = new List<string>();
        for (int i = 0; i < 20; i++)
        {
            string name = $"fresh-{transport}-{i}.txt";
            _files.Create(name, 100 + i, seed: i);
            using HttpResponseMessage response = await host.SendAsync(transport, "/" + name);
            Assert.Equal(HttpStatusCode.OK, response.StatusCode);
            DateTimeOffset date = response.Headers.Date ?? throw new InvalidOperationException("no Date");
            DateTimeOffset modified = response.Content.Headers.LastModified ?? throw new InvalidOperationException("no Last-Modified");
            if (modified > date)
            {
                late.Add($"{name}: Last-Modified {response.Header("Last-Modified")} after Date {response.Header("Date")}");
            }

            await Task.Delay(50);
        }

        Assert.Empty(late);
    }
}
