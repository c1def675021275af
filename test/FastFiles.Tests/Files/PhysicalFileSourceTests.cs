using FastFiles.Files;

namespace FastFiles.Tests.Files;

/// <summary>
/// A root at the file system's root ("/"; "D:\" on Windows) keeps its separator when trimmed: paths under it were built
/// as "//tmp/a.txt" and the real root as "//", which no real path starts with, so every file was a 404 where
/// UseStaticFiles serves it.
/// </summary>
public sealed class PhysicalFileSourceTests : IDisposable
{
    private readonly string _directory = Directory.CreateTempSubdirectory("ff-source-").FullName;

    public void Dispose() => Directory.Delete(_directory, recursive: true);

    [Fact]
    public void A_file_system_root_serves_the_files_under_it()
    {
        string file = Path.Combine(_directory, "a.txt");
        File.WriteAllText(file, "hello");
        var source = new PhysicalFileSource("/", followLinksOutsideRoot: false);

        Assert.Equal(file, source.MapPath(file));
        Assert.Equal(LookupResult.File, source.TryOpen(file, null, out FileVersion? version));
        using (version)
        {
            Assert.Equal(5, version!.Length);
        }

        Assert.Equal(LookupResult.Directory, source.TryOpen(_directory, null, out _));
        Assert.Equal(LookupResult.NotFound, source.TryOpen(Path.Combine(_directory, "missing.txt"), null, out _));
    }

    [Fact]
    public void A_link_out_of_a_root_is_still_refused()
    {
        string root = Directory.CreateDirectory(Path.Combine(_directory, "root")).FullName;
        File.WriteAllText(Path.Combine(_directory, "secret.txt"), "secret");
        File.CreateSymbolicLink(Path.Combine(root, "link.txt"), Path.Combine(_directory, "secret.txt"));
        var source = new PhysicalFileSource(root + "/", followLinksOutsideRoot: false);

        Assert.Equal(LookupResult.NotFound, source.TryOpen("/link.txt", null, out _));
    }
}
