using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace FastFiles.FunctionalTests.Results;

/// <summary>
/// <c>FastResults.File(root, relativePath)</c> resolves like <c>UseFastFiles</c>: the traversal corpus and symbolic links
/// out of the root are refused over raw sockets, both in a test host and in the sample's <c>/download</c> route as shipped.
/// </summary>
public sealed class RootedFileResultTests(RootedFileResultTests.Fixture fixture) : IClassFixture<RootedFileResultTests.Fixture>
{
    private readonly Fixture _f = fixture;

    public sealed class Fixture : IAsyncLifetime
    {
        public TestFiles Files { get; } = new();

        public TestHost Host { get; private set; } = null!;

        public SampleProcess Sample { get; private set; } = null!;

        public string WebRoot => Files.PathOf(EscapeCorpus.WebRoot);

        public async Task InitializeAsync()
        {
            EscapeCorpus.WriteTree(Files);
            Files.Write("www/%2e%2e", Encoding.ASCII.GetBytes("literal name"));

            Host = await TestHost.StartAsync(app =>
            {
                app.MapGet("/download/{**path}", (string path) => FastResults.File(WebRoot, path, fileDownloadName: Path.GetFileName(path)));
                app.MapGet("/q", (HttpContext context) => FastResults.File(WebRoot, context.Request.Query["p"].ToString()));
            });
            Sample = await SampleProcess.StartAsync(WebRoot);
        }

        public async Task DisposeAsync()
        {
            await ResponseHeaders.AssertNoOpenFilesUnderAsync(Files.Root);
            await Sample.DisposeAsync();
            await Host.DisposeAsync();
            Files.Dispose();
        }
    }

    [Theory]
    [MemberData(nameof(EscapeCorpus.Traversal), MemberType = typeof(EscapeCorpus))]
    [MemberData(nameof(EscapeCorpus.LinksOut), MemberType = typeof(EscapeCorpus))]
    [InlineData("/")]
    public async Task Download_route_refuses_traversal_and_links_out(string path)
    {
        foreach (Uri server in new[] { _f.Host.Http, _f.Sample.Http })
        {
            RawResponse response = await RawHttp.SendAsync(server, "/download" + path);
            EscapeCorpus.AssertRefused(response.Status, response.Body, server + "download" + path, anyClientError: true);
        }

        RawResponse query = await RawHttp.SendAsync(_f.Host.Http, "/q?p=" + Uri.EscapeDataString(Uri.UnescapeDataString(path)));
        EscapeCorpus.AssertRefused(query.Status, query.Body, "/q " + path, anyClientError: true);
    }

    [Theory]
    [InlineData("/hello.txt", "hello")]
    [InlineData("/sub/ok.txt", "ok")]
    [InlineData("/link-in.txt", "hello")]
    [InlineData("/linkdir-in/ok.txt", "ok")]
    [InlineData("/%252e%252e", "literal name")]
    public async Task Download_route_serves_files_and_links_inside_the_root(string path, string content)
    {
        foreach (Uri server in new[] { _f.Host.Http, _f.Sample.Http })
        {
            RawResponse response = await RawHttp.SendAsync(server, "/download" + path);
            Assert.Equal(200, response.Status);
            Assert.Equal(content, Encoding.ASCII.GetString(response.Body));
            Assert.StartsWith("attachment", response.Headers["Content-Disposition"], StringComparison.Ordinal);
        }
    }

    [Theory]
    [InlineData("/.env")]
    [InlineData("/sub")]
    [InlineData("/missing.txt")]
    public async Task Dotfiles_directories_and_missing_files_are_404(string path)
    {
        foreach (Uri server in new[] { _f.Host.Http, _f.Sample.Http })
        {
            RawResponse response = await RawHttp.SendAsync(server, "/download" + path);
            Assert.Equal(404, response.Status);
        }
    }
}
