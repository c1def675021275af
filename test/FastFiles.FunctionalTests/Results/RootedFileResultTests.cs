using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.FunctionalTests.StaticFiles;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace FastFiles.FunctionalTests.Results;

/// <summary>
/// <c>FastResults.File(root, relativePath)</c> resolves like <c>UseFastFiles</c>: the traversal corpus and symbolic links
/// out of the root are refused over raw sockets, both in a test host and in the sample's <c>/download</c> route as shipped.
/// </summary>
public sealed class RootedFileResultTests(RootedFileResultTests.Fixture fixture) : IClassFixture<RootedFileResultTests.Fixture>
{
    private const string Secret = "TOP-SECRET-4f1d9a";
    private const string Outside = "OUTSIDE-DIR-77b2";
    private readonly Fixture _f = fixture;

    public sealed class Fixture : IAsyncLifetime
    {
        public TestFiles Files { get; } = new();

        public TestHost Host { get; private set; } = null!;

        public SampleProcess Sample { get; private set; } = null!;

        public string WebRoot => Files.PathOf("www");

        public async Task InitializeAsync()
        {
            Files.Write("secret.txt", Encoding.ASCII.GetBytes(Secret));
            Files.Write("link-secret.txt", Encoding.ASCII.GetBytes(Secret));
            Files.Write("outside/outside.txt", Encoding.ASCII.GetBytes(Outside));
            Files.Write("www/hello.txt", Encoding.ASCII.GetBytes("hello"));
            Files.Write("www/sub/ok.txt", Encoding.ASCII.GetBytes("ok"));
            Files.Write("www/.env", Encoding.ASCII.GetBytes("dotenv"));
            Files.Write("www/%2e%2e", Encoding.ASCII.GetBytes("literal name"));
            File.CreateSymbolicLink(Files.PathOf("www/link-in.txt"), Files.PathOf("www/hello.txt"));
            File.CreateSymbolicLink(Files.PathOf("www/link-secret.txt"), Files.PathOf("secret.txt"));
            File.CreateSymbolicLink(Files.PathOf("www/link-out-relative.txt"), "../secret.txt");
            File.CreateSymbolicLink(Files.PathOf("www/link-to-link-out.txt"), Files.PathOf("www/link-secret.txt"));
            Directory.CreateSymbolicLink(Files.PathOf("www/linkdir-out"), Files.PathOf("outside"));
            Directory.CreateSymbolicLink(Files.PathOf("www/linkdir-in"), Files.PathOf("www/sub"));

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

    public static TheoryData<string> Links() => new()
    {
        "/link-secret.txt",
        "/link-out-relative.txt",
        "/link-to-link-out.txt",
        "/linkdir-out/outside.txt",
        "/",
    };

    [Theory]
    [MemberData(nameof(SafetyTests.TraversalCorpus), MemberType = typeof(SafetyTests))]
    [MemberData(nameof(Links))]
    public async Task Download_route_refuses_traversal_and_links_out(string path)
    {
        foreach (Uri server in new[] { _f.Host.Http, _f.Sample.Http })
        {
            RawResponse response = await RawHttp.SendAsync(server, "/download" + path);
            AssertRefused(response, server + "download" + path);
        }

        RawResponse query = await RawHttp.SendAsync(_f.Host.Http, "/q?p=" + Uri.EscapeDataString(Uri.UnescapeDataString(path)));
        AssertRefused(query, "/q " + path);
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

    private static void AssertRefused(RawResponse response, string target)
    {
        // 404, or a 4xx from Kestrel or routing for what never reaches the result (414 for a huge target).
        Assert.True(response.Status is >= 400 and < 500, $"{target} -> {response.Status}");
        string text = Encoding.Latin1.GetString(response.Body);
        Assert.DoesNotContain(Secret, text, StringComparison.Ordinal);
        Assert.DoesNotContain(Outside, text, StringComparison.Ordinal);
        Assert.DoesNotContain("root:", text, StringComparison.Ordinal);
    }
}
