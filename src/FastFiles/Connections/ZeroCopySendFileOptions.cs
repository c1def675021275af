namespace Microsoft.AspNetCore.Builder;

/// <summary>Settings of the zero-copy send path (sendfile(2) for file bodies on plaintext HTTP/1.x connections).</summary>
public sealed class ZeroCopySendFileOptions
{
    /// <summary>
    /// Bodies read from disk shorter than this many bytes are copied as before; longer ones are sent with sendfile(2).
    /// Bodies the file cache holds in memory follow <see cref="CachedMinimumLength"/>.
    /// </summary>
    /// <remarks>Defaults to 16 KiB.</remarks>
    public long MinimumLength { get; set; } = 16 * 1024;

    /// <summary>
    /// Bodies the file cache holds in memory are written from memory when shorter than this many bytes; from this length
    /// on they are sent with sendfile(2) from a descriptor the cache keeps open (within <c>FastFilesOptions.MaxOpenFiles</c>),
    /// which costs the server less CPU than copying them into the socket (one core, loopback: 12.8 against 16.6 us per
    /// 32 KiB response, 19.4 against 24.9 us at 64 KiB, no difference at 16 KiB). The memory copy still serves TLS and
    /// HTTP/2, and any response the send path cannot take. <see cref="MinimumLength"/> applies too (the larger of the
    /// two is the threshold). <see cref="long.MaxValue"/> writes every cached body from memory.
    /// </summary>
    /// <remarks>Defaults to 32 KiB.</remarks>
    public long CachedMinimumLength { get; set; } = 32 * 1024;

    /// <summary>
    /// Files modified within this span of now (before or after) are copied instead of sent with sendfile(2). sendfile
    /// queues references to the page cache, so the kernel reads a body's bytes only when they leave (over loopback, when
    /// the reader reads them): a write into the file in that time changes bytes already sent, and no check can see it;
    /// a truncation zeroes the queued bytes that share a page-cache folio with the new end (nginx's sendfile has the
    /// same exposure). Replacing a file by rename is safe: the old file's pages stay as they were.
    /// Copied bytes are fixed once read, and the copy path checks the file before the last ones leave, so a file being
    /// rewritten in place ends its response short instead. A recent modification time is what such a file has; files at
    /// rest keep sendfile. <see cref="TimeSpan.Zero"/> sends every file with sendfile.
    /// </summary>
    /// <remarks>Defaults to 1 second.</remarks>
    public TimeSpan RecentWriteWindow { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>Adds a message per negative setting to <paramref name="failures"/>, each named after <paramref name="prefix"/>.</summary>
    internal void Validate(List<string> failures, string prefix)
    {
        if (MinimumLength < 0)
        {
            failures.Add($"{prefix}:{nameof(MinimumLength)} must not be negative (it is {MinimumLength}).");
        }

        if (CachedMinimumLength < 0)
        {
            failures.Add($"{prefix}:{nameof(CachedMinimumLength)} must not be negative (it is {CachedMinimumLength}).");
        }

        if (RecentWriteWindow < TimeSpan.Zero)
        {
            failures.Add($"{prefix}:{nameof(RecentWriteWindow)} must not be negative (it is {RecentWriteWindow}).");
        }
    }
}
