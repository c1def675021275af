using System.Net;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.Primitives;

namespace FastFiles.FunctionalTests.StaticFiles;

/// <summary>
/// Nothing outside the root is served: traversal corpus over raw sockets and HttpClient, dotfiles, symbolic links,
/// and files that vanish between lookup and open.
/// </summary>
public sealed class SafetyTests(SafetyTests.Fixture fixture) : IClassFixture<SafetyTests.Fixture>
{
    private readonly Fixture _f = fixture;

    public sealed class Fixture : HostFixture
    {

        public string WebRoot => Files.PathOf(EscapeCorpus.WebRoot);

        protected override async Task<TestHost> StartHostAsync()
        {
            EscapeCorpus.WriteTree(Files);
            Files.Write("www/doomed.txt", Encoding.ASCII.GetBytes("doomed"));
            Files.Write("www/stale.txt", Encoding.ASCII.GetBytes("identity"));
            Files.Write("www/stale.txt.br", Encoding.ASCII.GetBytes("brotli"));
            File.CreateSymbolicLink(Files.PathOf("www/dangling.txt"), Files.PathOf("www/nothing-here.txt"));

            return await TestHost.StartAsync(app =>
            {
                // Everything allowed, under /open.
                app.UseFastFiles(new FastStaticFileOptions
                {
                    RequestPath = "/open",
                    FileProvider = new PhysicalFileProvider(WebRoot),
                    ServeDotFiles = true,
                    FollowSymlinksOutsideRoot = true,
                    ServeUnknownFileTypes = true,
                });
                // A provider that deletes files right after looking them up (before FastFiles opens them).
                app.UseFastFiles(new FastStaticFileOptions
                {
                    RequestPath = "/racy",
                    FileProvider = new DeletingFileProvider(WebRoot, ["/doomed.txt", "/stale.txt.br"]),
                });
                app.UseFastFiles(new FastStaticFileOptions
                {
                    RequestPath = "/defaults",
                    FileProvider = new PhysicalFileProvider(WebRoot),
                    DefaultFileNames = ["index.html"],
                });
                app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(WebRoot) });
            });
        }
    }

    [Theory]
    [MemberData(nameof(EscapeCorpus.Traversal), MemberType = typeof(EscapeCorpus))]
    public async Task Raw_socket_traversal_is_400_or_404(string path)
    {
        foreach (string prefix in new[] { "", "/open", "/racy", "/defaults" })
        {
            RawResponse response = await RawHttp.SendAsync(_f.Host.Http, prefix + path);
            EscapeCorpus.AssertRefused(response.Status, response.Body, prefix + path);
        }
    }

    [Theory]
    [MemberData(nameof(EscapeCorpus.Traversal), MemberType = typeof(EscapeCorpus))]
    public async Task HttpClient_traversal_is_400_or_404(string path)
    {
        foreach (Transport transport in TransportMatrix.Default)
        {
            foreach (string prefix in new[] { "", "/open" })
            {
                // "//etc/passwd" alone is a network-path reference to another host: not a request to us.
                if (!Uri.TryCreate(_f.Host.BaseFor(transport), prefix + path, out Uri? uri) || uri.Authority != _f.Host.BaseFor(transport).Authority)
                {
                    continue;
                }

                using var request = new HttpRequestMessage(HttpMethod.Get, uri) { Version = TestHost.VersionFor(transport), VersionPolicy = HttpVersionPolicy.RequestVersionExact };
                try
                {
                    using HttpResponseMessage response = await _f.Host.Client.SendAsync(request);
                    EscapeCorpus.AssertRefused((int)response.StatusCode, await response.Content.ReadAsByteArrayAsync(), prefix + path);
                }
                catch (HttpRequestException ex) when (TestHost.VersionFor(transport) == System.Net.HttpVersion.Version20 && ex.InnerException is HttpProtocolException)
                {
                    // Kestrel refuses some targets (a decoded NUL) on HTTP/2 by resetting the stream: nothing was served.
                }
            }
        }
    }

    [Fact]
    public async Task Absolute_form_and_absolute_paths_are_refused()
    {
        string secretPath = _f.Files.PathOf("secret.txt");
        foreach (string target in new[]
        {
            $"http://{_f.Host.Http.Authority}/../secret.txt",
            $"http://{_f.Host.Http.Authority}/%2e%2e/secret.txt",
            $"http://{_f.Host.Http.Authority}/{secretPath}",
            secretPath,
            "/" + secretPath,
            "/open/" + secretPath,
            "/open" + secretPath,
            "../secret.txt",
        })
        {
            RawResponse response = await RawHttp.SendAsync(_f.Host.Http, target);
            EscapeCorpus.AssertRefused(response.Status, response.Body, target);
        }
    }

    [Fact]
    public async Task Positive_control_the_corpus_server_does_serve_files()
    {
        RawResponse response = await RawHttp.SendAsync(_f.Host.Http, "/hello.txt");
        Assert.Equal(200, response.Status);
        Assert.Equal("hello", Encoding.ASCII.GetString(response.Body));
        response = await RawHttp.SendAsync(_f.Host.Http, "/open/sub/ok.txt");
        Assert.Equal(200, response.Status);
        Assert.Equal("ok", Encoding.ASCII.GetString(response.Body));
    }

    [Theory]
    [InlineData("/.env", "dotenv")]
    [InlineData("/.git/config", "gitconfig")]
    [InlineData("/sub/.hidden/x.txt", "hidden")]
    public async Task Dotfiles_only_with_the_option(string path, string content)
    {
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage hidden = await _f.Host.SendAsync(transport, path);
            Assert.Equal(HttpStatusCode.NotFound, hidden.StatusCode);
            Assert.DoesNotContain(content, await hidden.Content.ReadAsStringAsync(), StringComparison.Ordinal);
            RawResponse raw = await RawHttp.SendAsync(_f.Host.Http, path.Replace(".", "%2e", StringComparison.Ordinal));
            Assert.Equal(404, raw.Status);

            using HttpResponseMessage shown = await _f.Host.SendAsync(transport, "/open" + path);
            Assert.Equal(HttpStatusCode.OK, shown.StatusCode);
            Assert.Equal(content, await shown.Content.ReadAsStringAsync());
        }
    }

    [Theory]
    [InlineData("/link-in.txt", "hello")]
    [InlineData("/link-in-relative.txt", "ok")]
    [InlineData("/linkdir-in/ok.txt", "ok")]
    public async Task Symlinks_inside_the_root_are_followed(string path, string content)
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, path);
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(content, await response.Content.ReadAsStringAsync());
    }

    [Theory]
    [InlineData("/link-out.txt", EscapeCorpus.Secret)]
    [InlineData("/link-out-relative.txt", EscapeCorpus.Secret)]
    [InlineData("/link-to-link-out.txt", EscapeCorpus.Secret)]
    [InlineData("/linkdir-out/outside.txt", EscapeCorpus.Outside)]
    public async Task Symlinks_leaving_the_root_are_followed_only_with_the_option(string path, string content)
    {
        foreach (Transport transport in TransportMatrix.Default)
        {
            using HttpResponseMessage refused = await _f.Host.SendAsync(transport, path);
            Assert.Equal(HttpStatusCode.NotFound, refused.StatusCode);
            Assert.DoesNotContain(content, await refused.Content.ReadAsStringAsync(), StringComparison.Ordinal);
            using HttpResponseMessage head = await _f.Host.SendAsync(transport, path, method: HttpMethod.Head);
            Assert.Equal(HttpStatusCode.NotFound, head.StatusCode);

            using HttpResponseMessage followed = await _f.Host.SendAsync(transport, "/open" + path);
            Assert.Equal(HttpStatusCode.OK, followed.StatusCode);
            Assert.Equal(content, await followed.Content.ReadAsStringAsync());
        }
    }

    [Theory]
    [InlineData("/defaults/linkdir-out/")]
    [InlineData("/defaults/linkdir-out")]
    [InlineData("/defaults/linkdir-out/index.html")]
    public async Task Default_files_do_not_follow_a_directory_link_out_of_the_root(string path)
    {
        RawResponse response = await RawHttp.SendAsync(_f.Host.Http, path);
        Assert.Equal(404, response.Status);
        Assert.False(response.Headers.ContainsKey("Location"));
        EscapeCorpus.AssertRefused(response.Status, response.Body, path);
    }

    [Fact]
    public async Task Default_files_follow_a_directory_link_inside_the_root()
    {
        RawResponse redirect = await RawHttp.SendAsync(_f.Host.Http, "/defaults/linkdir-in");
        Assert.Equal(301, redirect.Status);
        Assert.Equal("/defaults/linkdir-in/", redirect.Headers["Location"]);
        RawResponse index = await RawHttp.SendAsync(_f.Host.Http, "/defaults/linkdir-in/");
        Assert.Equal(200, index.Status);
        Assert.Equal("sub index", Encoding.ASCII.GetString(index.Body));
    }

    [Fact]
    public async Task Dangling_symlink_is_404()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/dangling.txt");
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
    }

    [Fact]
    public async Task File_deleted_between_lookup_and_open_is_404_not_500()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/racy/doomed.txt");
        Assert.Equal(HttpStatusCode.NotFound, response.StatusCode);
        Assert.False(File.Exists(Path.Combine(_f.WebRoot, "doomed.txt")));
    }

    [Fact]
    public async Task Sidecar_deleted_between_probe_and_open_falls_back_to_identity()
    {
        using HttpResponseMessage response = await _f.Host.SendAsync(Transport.Http11, "/racy/stale.txt", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "br"));
        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Null(response.Header("Content-Encoding"));
        Assert.Equal("identity", await response.Content.ReadAsStringAsync());
    }

    /// <summary>Looks files up like a PhysicalFileProvider, then deletes the chosen ones before returning them.</summary>
    private sealed class DeletingFileProvider(string root, string[] doomed) : IFileProvider
    {
        private readonly PhysicalFileProvider _inner = new(root);

        public IFileInfo GetFileInfo(string subpath)
        {
            IFileInfo info = _inner.GetFileInfo(subpath);
            if (doomed.Contains(subpath, StringComparer.Ordinal) && info.Exists && info.PhysicalPath is not null)
            {
                // Exists/Length/LastModified are now cached on the info: it still claims the file is there.
                _ = info.Length + info.LastModified.Ticks;
                File.Delete(info.PhysicalPath);
            }

            return info;
        }

        public IDirectoryContents GetDirectoryContents(string subpath) => _inner.GetDirectoryContents(subpath);

        public IChangeToken Watch(string filter) => _inner.Watch(filter);
    }
}
