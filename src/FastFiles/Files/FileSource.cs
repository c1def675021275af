namespace FastFiles.Files;

internal enum LookupResult
{
    NotFound,
    Directory,
    File,
}

/// <summary>Where the static-file middleware finds files: a physical root, or any <c>IFileProvider</c>.</summary>
internal abstract class FileSource
{
    /// <summary>Opens the file at <paramref name="subpath"/> (already checked by <see cref="PathSafety"/>).</summary>
    public abstract LookupResult TryOpen(string subpath, string? contentEncoding, out FileVersion? version);

    /// <summary>Whether a regular file exists at <paramref name="subpath"/>; used to probe sidecars.</summary>
    public abstract bool FileExists(string subpath);

    /// <summary>Whether a directory exists at <paramref name="subpath"/>; used for default files.</summary>
    public abstract bool DirectoryExists(string subpath);
}
