using Microsoft.Extensions.FileProviders;

namespace FastFiles.Files;

/// <summary>
/// Files from an arbitrary <see cref="IFileProvider"/> (embedded, composite, ...). Files the provider can place
/// on disk are still sent through the handle-based copy; others are read from their stream.
/// </summary>
internal sealed class ProviderFileSource(IFileProvider provider) : FileSource
{
    public override LookupResult TryOpen(string subpath, string? contentEncoding, out FileVersion? version)
    {
        version = null;
        IFileInfo info = provider.GetFileInfo(subpath);
        if (!info.Exists)
        {
            return provider.GetDirectoryContents(subpath).Exists ? LookupResult.Directory : LookupResult.NotFound;
        }

        if (info.IsDirectory)
        {
            return LookupResult.Directory;
        }

        if (string.IsNullOrEmpty(info.PhysicalPath))
        {
            version = FileVersion.FromProvider(info, contentEncoding);
            return LookupResult.File;
        }

        try
        {
            version = FileVersion.Open(info.PhysicalPath, contentEncoding);
            return LookupResult.File;
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException && !DescriptorExhaustion.Is(ex))
        {
            return LookupResult.NotFound;
        }
    }

    public override bool DirectoryExists(string subpath) => provider.GetDirectoryContents(subpath).Exists;

    public override bool FileExists(string subpath)
    {
        IFileInfo info = provider.GetFileInfo(subpath);
        return info.Exists && !info.IsDirectory;
    }
}
