using System.Globalization;
using Microsoft.Extensions.FileProviders;
using Microsoft.Net.Http.Headers;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.StaticFiles;

/// <summary>
/// One version of one representation (the file itself or a precompressed sidecar): its validators and the
/// header strings derived from them, computed from the opened file so headers always describe the bytes sent.
/// </summary>
internal sealed class FileVersion : IDisposable
{
    private FileVersion(
        string? physicalPath, SafeFileHandle? handle, IFileInfo? fileInfo, long length, DateTimeOffset lastWriteUtc, string? contentEncoding)
    {
        PhysicalPath = physicalPath;
        Handle = handle;
        FileInfo = fileInfo;
        Length = length;
        ContentEncoding = contentEncoding;

        // Last-Modified has one-second resolution (RFC 9110 5.6.7).
        LastModified = new DateTimeOffset(lastWriteUtc.UtcTicks - (lastWriteUtc.UtcTicks % TimeSpan.TicksPerSecond), TimeSpan.Zero);
        LastModifiedHeader = HeaderUtilities.FormatDate(LastModified);
        ETag = FormatETag(lastWriteUtc.UtcTicks, length, contentEncoding);
    }

    public string? PhysicalPath { get; }

    /// <summary>The open file, for physical files; owned by this instance.</summary>
    public SafeFileHandle? Handle { get; }

    /// <summary>The provider's file, for providers without physical paths (embedded files and the like).</summary>
    public IFileInfo? FileInfo { get; }

    public long Length { get; }

    public DateTimeOffset LastModified { get; }

    public string LastModifiedHeader { get; }

    /// <summary>A strong validator (RFC 9110 8.8.3).</summary>
    public string ETag { get; }

    /// <summary><c>br</c>, <c>zstd</c>, <c>gzip</c>, or <see langword="null"/> for the identity representation.</summary>
    public string? ContentEncoding { get; }

    /// <summary>Opens <paramref name="path"/> and reads its validators from the handle (fstat), not the path.</summary>
    /// <exception cref="IOException">The file does not exist or cannot be opened as a file.</exception>
    /// <exception cref="UnauthorizedAccessException">The path is a directory or is not readable.</exception>
    public static FileVersion Open(string path, string? contentEncoding)
    {
        SafeFileHandle handle = File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        try
        {
            long length = RandomAccess.GetLength(handle);
            DateTime lastWrite = File.GetLastWriteTimeUtc(handle);
            return new FileVersion(path, handle, null, length, new DateTimeOffset(lastWrite, TimeSpan.Zero), contentEncoding);
        }
        catch
        {
            handle.Dispose();
            throw;
        }
    }

    public static FileVersion FromProvider(IFileInfo fileInfo, string? contentEncoding)
        => new(null, null, fileInfo, fileInfo.Length, fileInfo.LastModified.ToUniversalTime(), contentEncoding);

    /// <summary>
    /// <c>"mtime-length"</c> in hex, with the coding appended for sidecars. Unlike UseStaticFiles (seconds XOR
    /// length) it keeps the full sub-second modification time, so two same-size writes within one second get
    /// different tags.
    /// </summary>
    internal static string FormatETag(long lastWriteTicks, long length, string? contentEncoding)
        => contentEncoding is null
            ? string.Create(CultureInfo.InvariantCulture, $"\"{lastWriteTicks:x}-{length:x}\"")
            : string.Create(CultureInfo.InvariantCulture, $"\"{lastWriteTicks:x}-{length:x}-{contentEncoding}\"");

    public void Dispose() => Handle?.Dispose();
}
