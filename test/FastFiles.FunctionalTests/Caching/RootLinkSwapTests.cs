using System.Diagnostics;
using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Caching;

/// <summary>A root that is itself a symbolic link (an atomic "current -> releases/N" deploy) keeps serving after the link is swapped.</summary>
public sealed class RootLinkSwapTests : IDisposable
{
    private static readonly TimeSpan Eventually = TimeSpan.FromSeconds(10);
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    private static void Run(string file, params string[] args)
    {
        var psi = new ProcessStartInfo(file);
        foreach (string a in args)
        {
            psi.ArgumentList.Add(a);
        }

        using Process p = Process.Start(psi)!;
        p.WaitForExit();
        Assert.Equal(0, p.ExitCode);
    }

    private static Task<(HttpStatusCode Status, byte[] Body)> EventuallyAsync(TestHost host, string path, Func<(HttpStatusCode Status, byte[] Body), bool> done)
        => Poll.EventuallyAsync(
            async () =>
            {
                using HttpResponseMessage response = await host.SendAsync(Transport.Http11, path);
                return (response.StatusCode, await response.Content.ReadAsByteArrayAsync());
            },
            done,
            Eventually);

    // Capistrano-style deploy: the root is a symbolic link ("current") swapped atomically to a new release directory.
    [Fact]
    public async Task Root_that_is_a_symlink_swapped_to_a_new_release_keeps_serving()
    {
        byte[] v1 = _files.Create("releases/1/app.js", 3000, seed: 1);
        byte[] v2 = _files.Create("releases/2/app.js", 3000, seed: 2);
        File.CreateSymbolicLink(_files.PathOf("current"), _files.PathOf("releases/1"));
        await using TestHost host = await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.PathOf("current")), ServeUnknownFileTypes = true }),
            services => services.AddFastFiles());

        var first = await EventuallyAsync(host, "/app.js", r => true);
        Assert.Equal(HttpStatusCode.OK, first.Status);
        Assert.Equal(v1, first.Body);

        File.CreateSymbolicLink(_files.PathOf("current.tmp"), _files.PathOf("releases/2"));
        Run("mv", "-T", _files.PathOf("current.tmp"), _files.PathOf("current"));

        var second = await EventuallyAsync(host, "/app.js", r => r.Status == HttpStatusCode.OK && r.Body.SequenceEqual(v2));
        Assert.Equal(HttpStatusCode.OK, second.Status);
        Assert.Equal(v2, second.Body);
    }
}
