using System.Collections.Concurrent;
using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace FastFiles.FunctionalTests.Results;

/// <summary>
/// <c>DisableStringReuse</c> means the same for the results as for the middleware: with Kestrel's (or FastFiles')
/// option set, a result neither hands out shared header strings nor consults the connection's request header cache.
/// </summary>
public sealed class ResultStringReuseTests : IDisposable
{
    private readonly TestFiles _files = new();

    public ResultStringReuseTests() => _files.Create("report.pdf", 5000);

    public void Dispose() => _files.Dispose();

    [Theory]
    [InlineData(null, false, true)]
    [InlineData(null, true, false)]
    [InlineData(true, false, false)]
    [InlineData(false, true, true)]
    public async Task The_request_header_cache_is_used_only_when_strings_are_reused(bool? fastFilesDisable, bool kestrelDisable, bool expectUsed)
    {
        var memos = new ConcurrentBag<RequestHeaderCache>();
        string path = _files.PathOf("report.pdf");
        await using TestHost host = await TestHost.StartAsync(
            app => app.MapGet("/file", () => FastResults.PhysicalFile(path)),
            services => services.AddFastFiles(o => o.DisableStringReuse = fastFilesDisable),
            kestrel => kestrel.DisableStringReuse = kestrelDisable,
            configureH2c: l =>
            {
                l.UseRequestHeaderCache();
                l.Use(next => connection =>
                {
                    memos.Add(connection.Features.Get<RequestHeaderCache>()!);
                    return next(connection);
                });
            });

        using HttpResponseMessage response = await host.SendAsync(Transport.H2c, "/file", r =>
        {
            r.Headers.TryAddWithoutValidation("If-Modified-Since", "Sat, 01 Jan 2000 00:00:00 GMT");
            r.Headers.TryAddWithoutValidation("Range", "bytes=0-9");
        });
        Assert.Equal(HttpStatusCode.PartialContent, response.StatusCode);

        // AddFastFiles settled the option once, for everything that reads it.
        Assert.Equal(!expectUsed, host.Services.GetRequiredService<IOptions<FastFilesOptions>>().Value.DisableStringReuse);
        Assert.NotEmpty(memos);
        Assert.Equal(expectUsed, memos.Any(m => !m.IsEmpty));
    }
}
