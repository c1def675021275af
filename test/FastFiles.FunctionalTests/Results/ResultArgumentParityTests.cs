using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace FastFiles.FunctionalTests.Results;

/// <summary>FastResults.PhysicalFile against Results.File for the same arguments: download names, ranges on and off, content types, HEAD.</summary>
public sealed class ResultArgumentParityTests : IAsyncLifetime
{
    private readonly TestFiles _files = new();
    private TestHost _host = null!;

    public async Task InitializeAsync()
    {
        _files.Create("data.bin", 10_000);
        _files.Create("page.html", 3000);
        _files.Create("noext", 3000);
        string root = _files.Root;
        _host = await TestHost.StartAsync(app =>
        {
            app.MapMethods("/stock/{name}", ["GET", "HEAD"], (string name, string? dl, bool? ranges, string? ct) =>
                Microsoft.AspNetCore.Http.Results.File(Path.Combine(root, name), ct, dl, enableRangeProcessing: ranges ?? true));
            app.MapMethods("/fast/{name}", ["GET", "HEAD"], (string name, string? dl, bool? ranges, string? ct) =>
                FastResults.PhysicalFile(Path.Combine(root, name), ct, dl, enableRangeProcessing: ranges ?? true));
        });
    }

    public async Task DisposeAsync()
    {
        await _host.DisposeAsync();
        _files.Dispose();
    }

    private async Task<string> RunAsync(Transport transport, string path, string? range, HttpMethod? method = null)
    {
        using HttpResponseMessage response = await _host.SendAsync(transport, path, r =>
        {
            if (range is not null)
            {
                r.Headers.TryAddWithoutValidation("Range", range);
            }
        }, method);
        byte[] body = await response.Content.ReadAsByteArrayAsync();
        return $"{(int)response.StatusCode} len={body.Length} cl={response.Content.Headers.ContentLength} ct={response.Content.Headers.ContentType} "
            + $"cd={string.Join("|", response.Content.Headers.TryGetValues("Content-Disposition", out var cd) ? cd : [])} "
            + $"ar={string.Join("|", response.Headers.TryGetValues("Accept-Ranges", out var ar) ? ar : [])} "
            + $"cr={response.Content.Headers.ContentRange}";
    }

    [Theory]
    [InlineData("data.bin?dl=r%C3%A9sum%C3%A9%20%E2%82%AC.pdf", null)]
    [InlineData("data.bin?dl=a%22b%3Bc.txt", null)]
    [InlineData("data.bin?dl=plain.txt", null)]
    [InlineData("data.bin?ranges=false", "bytes=0-9")]
    [InlineData("data.bin", "bytes=0-9")]
    [InlineData("noext", null)]
    [InlineData("data.bin?ct=text%2Fplain", null)]
    public async Task Same_response_as_results_file(string pathAndQuery, string? range)
    {
        foreach (Transport transport in new[] { Transport.Http11, Transport.H2c })
        {
            string stock = await RunAsync(transport, "/stock/" + pathAndQuery, range);
            string fast = await RunAsync(transport, "/fast/" + pathAndQuery, range);
            Assert.Equal(stock, fast);
        }
    }

    [Theory]
    [InlineData("data.bin", null)]
    // Not ("data.bin", "bytes=0-9"): stock answers HEAD + Range with 206, FastFiles with 200 (RFC 9110 14.2: range handling is defined for GET only): a deliberate difference.
    [InlineData("data.bin?ranges=false", "bytes=0-9")]
    [InlineData("data.bin?dl=x.bin", null)]
    public async Task Same_head_response_as_results_file(string pathAndQuery, string? range)
    {
        foreach (Transport transport in new[] { Transport.Http11, Transport.H2c })
        {
            string stock = await RunAsync(transport, "/stock/" + pathAndQuery, range, HttpMethod.Head);
            string fast = await RunAsync(transport, "/fast/" + pathAndQuery, range, HttpMethod.Head);
            Assert.Equal(stock, fast);
        }
    }
}
