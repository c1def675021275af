namespace Microsoft.AspNetCore.Builder;

/// <summary>
/// Process-wide settings for how FastFiles reads files and writes them to responses. Bind them from the
/// <c>FastFiles</c> configuration section or set them through <c>AddFastFiles(options =&gt; ...)</c>.
/// </summary>
public sealed class FastFilesOptions
{
    /// <summary>The smallest read buffer FastFiles will use: 1 KiB.</summary>
    public const int MinBufferSize = 1024;

    /// <summary>The largest read buffer FastFiles will use: 64 KiB.</summary>
    public const int MaxBufferSize = 64 * 1024;

    /// <summary>
    /// Size of each read from a file into the response <see cref="System.IO.Pipelines.PipeWriter"/>.
    /// Values are clamped to <see cref="MinBufferSize"/>..<see cref="MaxBufferSize"/>.
    /// </summary>
    /// <remarks>
    /// Defaults to 64 KiB. On HTTP/2 and HTTP/3 reads are capped at Kestrel's 4 KiB block size, so they land in
    /// Kestrel's pinned blocks: larger pipe buffers come from the shared array pool, which many concurrent streams
    /// exhaust. Reads are batched 64 KiB per flush. See <c>benchmarks/results/</c> for the measurements.
    /// </remarks>
    public int BufferSize { get; set; } = 64 * 1024;

    /// <summary>
    /// Bodies of at most this many bytes are read synchronously on the request thread with
    /// <see cref="RandomAccess.Read(Microsoft.Win32.SafeHandles.SafeFileHandle, Span{byte}, long)"/>; larger ones
    /// are read on the thread pool, 64 KiB per hop, so a slow disk cannot stall request threads.
    /// </summary>
    /// <remarks>Defaults to 256 KiB. 0 makes every read asynchronous.</remarks>
    public long SynchronousReadThreshold { get; set; } = 256 * 1024;

    /// <summary>
    /// When <see langword="true"/>, the validator header strings (ETag, Last-Modified) are formatted afresh for every
    /// response instead of being reused across requests, and the connection's request header cache
    /// (<c>UseRequestHeaderCache</c>) is not consulted. When <see langword="null"/> (the default), follows
    /// <c>KestrelServerOptions.DisableStringReuse</c>.
    /// </summary>
    /// <remarks>Defaults to <see langword="null"/>.</remarks>
    public bool? DisableStringReuse { get; set; }

    /// <summary>
    /// Whether <c>UseFastFiles</c> keeps file metadata, header strings and small files' bytes in memory. Applies to
    /// physical roots; other file providers are always read through.
    /// </summary>
    /// <remarks>Defaults to <see langword="true"/>.</remarks>
    public bool EnableFileCache { get; set; } = true;

    /// <summary>Files up to this size have their bytes cached; larger ones cache only metadata and are read from disk.</summary>
    /// <remarks>Defaults to 64 KiB. 0 caches no content.</remarks>
    public long MaxCachedFileSize { get; set; } = 64 * 1024;

    /// <summary>The total bytes of file content the cache may hold, per <c>UseFastFiles</c> root.</summary>
    /// <remarks>Defaults to 64 MiB. Least recently used entries are evicted first.</remarks>
    public long FileCacheSizeLimit { get; set; } = 64L * 1024 * 1024;

    /// <summary>The most entries (files, with their precompressed variants) the cache holds, per root.</summary>
    /// <remarks>Defaults to 16384.</remarks>
    public int MaxCachedFiles { get; set; } = 16384;

    /// <summary>
    /// How long a cached entry is trusted before it is checked against the file system again (one <c>statx</c>).
    /// Change notifications (inotify) normally invalidate entries within milliseconds; this is the upper bound when
    /// they are lost or unavailable. <c>MapStaticAssets().WithFastFiles()</c> looks at an asset it holds in memory as
    /// often, and leaves it to MapStaticAssets once the file has changed.
    /// </summary>
    /// <remarks>Defaults to 1 second (nginx's <c>open_file_cache_valid</c> defaults to 60 seconds).</remarks>
    public TimeSpan FileCacheRevalidationInterval { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>
    /// How many descriptors of files larger than <see cref="MaxCachedFileSize"/> the cache keeps open across requests,
    /// per root (nginx's <c>open_file_cache max=</c>), so their bodies are read with no open and close per request.
    /// A descriptor is closed as soon as the cache sees its file change, when its entry is evicted or revalidated
    /// away, and when the app stops; at the limit the least recently used tenth is closed. 0 turns this off.
    /// </summary>
    /// <remarks>
    /// Defaults to 1024: enough for the large files a site serves hot, and a small share of the process's descriptor
    /// limit. Over all roots, at most a quarter of the process's limit (RLIMIT_NOFILE) is kept, whatever this value. A deleted or replaced file's disk space stays allocated while its descriptor is open: until the cache
    /// sees the change (usually within milliseconds through inotify; without notifications, or where they do not reach
    /// (a subdirectory behind a symbolic link, a swapped root link), at the next request after
    /// <see cref="FileCacheRevalidationInterval"/>, or with no request within ten such intervals, at least a second),
    /// or the entry is evicted.
    /// </remarks>
    public int MaxOpenFiles { get; set; } = 1024;

    // Cached bodies from this length on also keep their descriptor, for the zero-copy send path: set by the endpoints
    // that have one (ZeroCopySendFileOptions.CachedMinimumLength), before the server takes requests.
    private long _cachedDescriptorMinimumLength = long.MaxValue;

    internal long CachedDescriptorMinimumLength => Volatile.Read(ref _cachedDescriptorMinimumLength);

    internal void RequestCachedDescriptors(long minimumLength)
    {
        long current;
        while (minimumLength < (current = Volatile.Read(ref _cachedDescriptorMinimumLength))
            && Interlocked.CompareExchange(ref _cachedDescriptorMinimumLength, minimumLength, current) != current)
        {
        }
    }

    /// <summary>
    /// The most range-specs a Range header may hold for a multipart/byteranges answer (RFC 9110 14.6); a request with
    /// more gets the whole file (200). 0 or 1 turns multipart answers off (several ranges then get a 200, as with
    /// UseStaticFiles). Applies to <c>UseFastFiles</c> and the file results. A compressed variant answers several ranges
    /// with the whole variant whatever this value.
    /// </summary>
    /// <remarks>
    /// Defaults to 64. Apache httpd's <c>MaxRanges</c> defaults to 200 and nginx's <c>max_ranges</c> is unlimited; with
    /// coalescing and the rule that ranges asking for more bytes than the file get the whole file (both always on, so
    /// no byte is sent twice), the count only bounds a response's parts: 64 keeps their header overhead to a few KiB
    /// and their reads to 64 while leaving room for clients that batch ranges (PDF and media readers).
    /// </remarks>
    public int MaxRanges { get; set; } = 64;

    /// <summary>
    /// The brotli quality (0 to 11) of variants made by dynamic compression (<c>FastStaticFileOptions.EnableDynamicCompression</c>).
    /// </summary>
    /// <remarks>
    /// Defaults to 6, the default of nginx's brotli module. Each file version is compressed once, but on the serving
    /// machine and in the background while it is sent uncompressed: measured here on a 68 KiB stylesheet and a 44 KiB
    /// script, quality 6 took 1.6 and 2.8 ms for 19.9% and 25.1% of the size, quality 11 took 100 times longer for 18.4% and
    /// 23.1%. Prefer build-time sidecars where the last few percent matter.
    /// </remarks>
    public int BrotliCompressionQuality { get; set; } = 6;

    /// <summary>
    /// The gzip level (1 to 9) of variants made by dynamic compression (<c>FastStaticFileOptions.EnableDynamicCompression</c>).
    /// </summary>
    /// <remarks>
    /// Defaults to 6, zlib's own default: on the same files level 9 saved under 0.5% more at a similar cost, level 1
    /// (nginx's per-request default) left output 20-40% larger.
    /// </remarks>
    public int GzipCompressionLevel { get; set; } = 6;

    internal int EffectiveBufferSize => Math.Clamp(BufferSize, MinBufferSize, MaxBufferSize);

    /// <summary>The longest body the content cache holds in memory: none is larger than the whole budget either.</summary>
    internal long LargestCachedBody => Math.Min(MaxCachedFileSize, FileCacheSizeLimit);
}
