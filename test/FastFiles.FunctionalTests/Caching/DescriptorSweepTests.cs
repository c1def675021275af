using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Caching;

/// <summary>
/// Changes the watcher does not see: a file reached through a symbolic link to a directory (its delete event names the
/// link's target) and a root link swapped to another release. The cache still closes the deleted or replaced file's
/// descriptor, with no request for it, within a few revalidation intervals (its periodic look at idle entries that hold
/// descriptors).
/// </summary>
public sealed class DescriptorSweepTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    private Task<TestHost> StartAsync(string root) => TestHost.StartAsync(
        app => app.UseFastFiles(new FastStaticFileOptions { FileProvider = new PhysicalFileProvider(root), ServeUnknownFileTypes = true }),
        // A short interval makes the periodic look come every second (ten intervals).
        services => services.AddFastFiles(o => o.FileCacheRevalidationInterval = TimeSpan.FromMilliseconds(100)));

    [Fact]
    public async Task A_file_deleted_behind_a_linked_directory_loses_its_descriptor_without_a_request()
    {
        // Over the largest cached body: the entry keeps the file's descriptor.
        _files.Create("www/store/big.bin", 200_000);
        File.CreateSymbolicLink(_files.PathOf("www/media"), _files.PathOf("www/store"));
        await using TestHost host = await StartAsync(_files.PathOf("www"));

        Assert.Equal(200, (await RawHttp.SendAsync(host.HttpCopy, "/media/big.bin")).Status);
        Assert.Single(OpenFileDescriptors.TargetsUnder(_files.PathOf("www/store")));

        File.Delete(_files.PathOf("www/store/big.bin"));
        await OpenFileDescriptors.AssertNoneUnderAsync(_files.PathOf("www/store"));
    }

    [Fact]
    public async Task A_file_deleted_from_the_release_a_swapped_root_link_now_names_loses_its_descriptor()
    {
        _files.Create("releases/1/big.bin", 200_000, seed: 1);
        _files.Create("releases/2/big.bin", 200_000, seed: 2);
        File.CreateSymbolicLink(_files.PathOf("current"), _files.PathOf("releases/1"));
        await using TestHost host = await StartAsync(_files.PathOf("current"));
        Assert.Equal(200, (await RawHttp.SendAsync(host.HttpCopy, "/big.bin")).Status);

        // The deploy: the link now names release 2, whose file is then served and kept open; the watcher still watches 1.
        File.Delete(_files.PathOf("current"));
        File.CreateSymbolicLink(_files.PathOf("current"), _files.PathOf("releases/2"));
        await Poll.EventuallyAsync(
            async () => (await RawHttp.SendAsync(host.HttpCopy, "/big.bin")).Body,
            body => OpenFileDescriptors.CountUnder(_files.PathOf("releases/2")) == 1,
            TimeSpan.FromSeconds(30));
        Assert.Single(OpenFileDescriptors.TargetsUnder(_files.PathOf("releases/2")));

        File.Delete(_files.PathOf("releases/2/big.bin"));
        await OpenFileDescriptors.AssertNoneUnderAsync(_files.PathOf("releases/2"));
    }
}
