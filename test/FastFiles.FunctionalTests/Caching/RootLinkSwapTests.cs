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

    [System.Runtime.InteropServices.DllImport("libc", SetLastError = true)]
    private static extern int rename(string from, string to);

    /// <summary>
    /// A file every release holds is never a 404 while the root link is swapped under running requests: a request that
    /// opened it in the release the link named then is checked against that release, even if another request has
    /// re-read the root since.
    /// </summary>
    [Fact]
    public async Task A_file_in_every_release_is_never_a_404_while_the_root_link_is_swapped()
    {
        _files.Write("releases/1/a.txt", "one"u8.ToArray());
        _files.Write("releases/2/a.txt", "two"u8.ToArray());
        File.CreateSymbolicLink(_files.PathOf("current"), _files.PathOf("releases/1"));
        // Without the file cache every request opens the file and checks where it really is.
        await using TestHost host = await TestHost.StartAsync(
            app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(_files.PathOf("current")), ServeUnknownFileTypes = true }),
            services => services.AddFastFiles(o => o.EnableFileCache = false));

        using var running = new CancellationTokenSource(TimeSpan.FromSeconds(4));
        var answers = new System.Collections.Concurrent.ConcurrentDictionary<string, int>();
        async Task ReadAsync()
        {
            while (!running.IsCancellationRequested)
            {
                using HttpResponseMessage response = await host.SendAsync(Transport.Http11, "/a.txt");
                string answer = $"{(int)response.StatusCode} {await response.Content.ReadAsStringAsync()}";
                answers.AddOrUpdate(answer, 1, (_, n) => n + 1);
            }
        }

        Task[] readers = [Task.Run(ReadAsync), Task.Run(ReadAsync)];
        int swaps = 0;
        while (!running.IsCancellationRequested)
        {
            // An atomic swap: a new link renamed over the old one.
            string next = _files.PathOf(swaps++ % 2 == 0 ? "releases/2" : "releases/1");
            File.CreateSymbolicLink(_files.PathOf("current.tmp"), next);
            Assert.Equal(0, rename(_files.PathOf("current.tmp"), _files.PathOf("current")));
            await Task.Delay(50);
        }

        await Task.WhenAll(readers);
        string seen = string.Join(", ", answers.Select(a => $"{a.Key}: {a.Value}"));
        Assert.True(answers.Keys.All(a => a is "200 one" or "200 two"), seen);
        Assert.True(answers.ContainsKey("200 one") && answers.ContainsKey("200 two"), seen);
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
