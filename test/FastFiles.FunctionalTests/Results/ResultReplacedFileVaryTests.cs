using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using FastFiles.FunctionalTests.StaticFiles;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.FunctionalTests.Results;

/// <summary>
/// A compressible file replaced under its cached entry before the cache notices (here: behind a symlink out of the root,
/// which the root's watcher does not see, with a long revalidation interval) is answered from disk; that response
/// varies by Accept-Encoding like every other response for the file, as <c>UseFastFiles</c>' answer from disk does.
/// </summary>
public sealed class ResultReplacedFileVaryTests
{
    [Theory]
    [Transports]
    public async Task A_compressible_file_replaced_under_its_cached_entry_is_sent_with_Vary(Transport transport)
    {
        DirectoryInfo outside = Directory.CreateTempSubdirectory("ff-vary-out-");
        DirectoryInfo root = Directory.CreateTempSubdirectory("ff-vary-root-");
        try
        {
            string file = Path.Combine(outside.FullName, "big.css");
            File.WriteAllBytes(file, DynamicCompressionTests.Text(200_000, 21));
            Directory.CreateSymbolicLink(Path.Combine(root.FullName, "lib"), outside.FullName);
            await using TestHost host = await TestHost.StartAsync(
                app => app.MapGet("/res/{**path}", (string path) => new FastPhysicalFileResult(root.FullName, path, null)
                {
                    EnableDynamicCompression = true,
                    FollowSymlinksOutsideRoot = true,
                }),
                services => services.AddFastFiles(o =>
                {
                    o.FileCacheRevalidationInterval = TimeSpan.FromHours(1);
                    o.MaxOpenFiles = 0;
                }));

            using (HttpResponseMessage first = await host.SendAsync(transport, "/res/lib/big.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "identity")))
            {
                Assert.Equal(HttpStatusCode.OK, first.StatusCode);
                Assert.Contains("Accept-Encoding", first.Headers.Vary);
            }

            byte[] changed = DynamicCompressionTests.Text(210_000, 22);
            File.WriteAllBytes(file + ".new", changed);
            File.Move(file + ".new", file, overwrite: true);

            using HttpResponseMessage second = await host.SendAsync(transport, "/res/lib/big.css", r => r.Headers.TryAddWithoutValidation("Accept-Encoding", "identity"));
            Assert.Equal(HttpStatusCode.OK, second.StatusCode);
            Assert.Equal(changed, await second.Content.ReadAsByteArrayAsync());
            Assert.Contains("Accept-Encoding", second.Headers.Vary);
        }
        finally
        {
            root.Delete(recursive: true);
            outside.Delete(recursive: true);
        }
    }
}
