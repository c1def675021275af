using System.IO.Compression;
using System.Xml.Linq;

namespace FastFiles.Tests.Packaging;

/// <summary>Tests that pack the library run one at a time: each <c>dotnet pack</c> writes the same files under obj/.</summary>
[CollectionDefinition(Name)]
public sealed class PackageCollection
{
    public const string Name = "Package";
}

/// <summary>
/// The .nupkg a user restores: the library and its XML documentation for net10.0, the README, the MIT license expression
/// and repository commit, ASP.NET Core as a framework reference and no package dependencies; nothing else (no tests,
/// benchmarks or samples). The symbols package carries the PDB.
/// </summary>
[Collection(PackageCollection.Name)]
public sealed class PackageContentsTests
{
    [Fact]
    public async Task Package_holds_the_library_its_docs_and_readme_and_depends_only_on_the_AspNetCore_framework()
    {
        string repo = ReadmeSnippetTests.RepositoryRoot();
        string feed = Path.Combine(Path.GetTempPath(), "fastfiles-pack-" + Guid.NewGuid().ToString("N"));
        try
        {
            string configuration = AppContext.BaseDirectory.Contains($"{Path.DirectorySeparatorChar}Debug{Path.DirectorySeparatorChar}", StringComparison.Ordinal) ? "Debug" : "Release";
            (int exit, string output) = await ReadmeSnippetTests.DotnetAsync(repo, "pack", Path.Combine(repo, "src", "FastFiles", "FastFiles.csproj"), "-c", configuration, "--no-build", "-o", feed);
            Assert.True(exit == 0, "dotnet pack failed:\n" + output);

            string nupkg = Assert.Single(Directory.GetFiles(feed, "FastFiles.*.nupkg"));
            using (ZipArchive package = ZipFile.OpenRead(nupkg))
            {
                string[] content = package.Entries.Select(e => e.FullName)
                    .Where(n => !n.StartsWith("_rels/", StringComparison.Ordinal) && !n.StartsWith("package/", StringComparison.Ordinal) && n != "[Content_Types].xml")
                    .Order(StringComparer.Ordinal).ToArray();
                Assert.Equal(["FastFiles.nuspec", "README.md", "lib/net10.0/FastFiles.dll", "lib/net10.0/FastFiles.xml"], content);

                XDocument nuspec;
                using (Stream stream = package.GetEntry("FastFiles.nuspec")!.Open())
                {
                    nuspec = XDocument.Load(stream);
                }

                XNamespace ns = nuspec.Root!.Name.Namespace;
                XElement metadata = nuspec.Root.Element(ns + "metadata")!;
                Assert.Equal("FastFiles", metadata.Element(ns + "id")!.Value);
                Assert.Equal("expression", metadata.Element(ns + "license")!.Attribute("type")!.Value);
                Assert.Equal("MIT", metadata.Element(ns + "license")!.Value);
                Assert.Equal("README.md", metadata.Element(ns + "readme")!.Value);
                Assert.False(string.IsNullOrWhiteSpace(metadata.Element(ns + "description")?.Value));
                XElement repository = metadata.Element(ns + "repository")!;
                Assert.Equal("https://github.com/fastfiles/fastfiles", repository.Attribute("url")!.Value);
                Assert.Matches("^[0-9a-f]{40}$", repository.Attribute("commit")!.Value);

                // One net10.0 group and no package in it: everything FastFiles uses ships with ASP.NET Core.
                XElement group = Assert.Single(metadata.Element(ns + "dependencies")!.Elements(ns + "group"));
                Assert.Equal("net10.0", group.Attribute("targetFramework")!.Value);
                Assert.Empty(group.Elements());
                XElement frameworks = Assert.Single(metadata.Element(ns + "frameworkReferences")!.Elements(ns + "group"));
                Assert.Equal(["Microsoft.AspNetCore.App"], frameworks.Elements(ns + "frameworkReference").Select(f => f.Attribute("name")!.Value));

                // The package README is the package's own, whose snippets ReadmeSnippetTests compiles.
                using var readme = new StreamReader(package.GetEntry("README.md")!.Open());
                Assert.Equal(await File.ReadAllTextAsync(Path.Combine(repo, "src", "FastFiles", "README.md")), await readme.ReadToEndAsync());
            }

            string snupkg = Assert.Single(Directory.GetFiles(feed, "FastFiles.*.snupkg"));
            using ZipArchive symbols = ZipFile.OpenRead(snupkg);
            Assert.Contains(symbols.Entries, e => e.FullName == "lib/net10.0/FastFiles.pdb");
        }
        finally
        {
            if (Directory.Exists(feed))
            {
                Directory.Delete(feed, recursive: true);
            }
        }
    }
}
