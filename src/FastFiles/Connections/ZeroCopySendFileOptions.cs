namespace Microsoft.AspNetCore.Builder;

/// <summary>Settings of the zero-copy send path (sendfile(2) for file bodies on plaintext HTTP/1.x connections).</summary>
public sealed class ZeroCopySendFileOptions
{
    /// <summary>
    /// Bodies shorter than this many bytes are copied as before; longer ones are sent with sendfile(2). Bodies held by
    /// the file cache are always written from memory.
    /// </summary>
    /// <remarks>Defaults to 16 KiB.</remarks>
    public long MinimumLength { get; set; } = 16 * 1024;
}
