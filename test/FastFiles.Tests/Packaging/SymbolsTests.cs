using System.Reflection.Metadata;
using System.Reflection.PortableExecutable;
using System.Text.Json;
using System.Text.RegularExpressions;

namespace FastFiles.Tests.Packaging;

/// <summary>The library's PDB maps its sources to the repository at the built commit, and the build is deterministic.</summary>
public sealed class SymbolsTests
{
    // Portable PDB custom debug information kind for Source Link (see the Portable PDB specification).
    private static readonly Guid SourceLinkKind = new("CC110556-A091-4D38-9FEC-25AB9A351A6A");

    private static string LibraryPath => typeof(Microsoft.Extensions.DependencyInjection.FastFilesServiceCollectionExtensions).Assembly.Location;

    [Fact]
    public void Pdb_has_source_link_to_the_repository_commit()
    {
        string pdb = Path.ChangeExtension(LibraryPath, ".pdb");
        Assert.True(File.Exists(pdb), $"no PDB beside {LibraryPath}");
        using FileStream stream = File.OpenRead(pdb);
        using MetadataReaderProvider provider = MetadataReaderProvider.FromPortablePdbStream(stream);
        MetadataReader reader = provider.GetMetadataReader();

        string? json = null;
        foreach (CustomDebugInformationHandle handle in reader.CustomDebugInformation)
        {
            CustomDebugInformation info = reader.GetCustomDebugInformation(handle);
            if (reader.GetGuid(info.Kind) == SourceLinkKind)
            {
                json = System.Text.Encoding.UTF8.GetString(reader.GetBlobBytes(info.Value));
            }
        }

        Assert.NotNull(json);
        using JsonDocument document = JsonDocument.Parse(json);
        string[] targets = document.RootElement.GetProperty("documents").EnumerateObject().Select(p => p.Value.GetString()!).ToArray();
        Assert.Contains(targets, t => Regex.IsMatch(t, "^https://raw\\.githubusercontent\\.com/fastfiles/fastfiles/[0-9a-f]{40}/\\*$"));
    }

    [Fact]
    public void Library_is_built_deterministically()
    {
        using var pe = new PEReader(File.OpenRead(LibraryPath));
        Assert.Contains(pe.ReadDebugDirectory(), entry => entry.Type == DebugDirectoryEntryType.Reproducible);
    }
}
