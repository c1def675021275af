using System.Buffers;
using System.IO.Compression;
using FastFiles.Files;

namespace FastFiles.Caching;

/// <summary>
/// Which cached files get dynamically compressed variants (by media type and size) and how they are made: brotli and
/// gzip from System.IO.Compression at fixed levels, once per file version.
/// </summary>
internal sealed class CompressionPolicy
{
    // Brotli's window: 4 MiB (lgwin 22) is the encoder's own default; larger windows need decoders to keep more memory
    // (RFC 7932 9.1), and a few browsers cap what they accept.
    private const int BrotliWindow = 22;

    /// <summary>The media types compressed unless configured otherwise (<c>FastStaticFileOptions.DefaultCompressibleContentTypes</c>).</summary>
    public static readonly IReadOnlyList<string> DefaultContentTypes =
    [
        "text/*",
        "application/javascript", "application/x-javascript",
        "application/json", "application/manifest+json", "application/ld+json", "application/geo+json", "application/problem+json",
        "application/xml", "application/xhtml+xml", "application/rss+xml", "application/atom+xml", "image/svg+xml",
        "application/wasm",
        "image/x-icon", "image/vnd.microsoft.icon", "image/bmp",
        "font/ttf", "font/otf", "application/x-font-ttf", "application/vnd.ms-fontobject",
    ];

    /// <summary>The default smallest file compressed (the reason is on <c>FastStaticFileOptions.DynamicCompressionMinimumSize</c>).</summary>
    public const long DefaultMinimumSize = 1024;

    /// <summary>The default largest file compressed (the reason is on <c>FastStaticFileOptions.DynamicCompressionMaximumSize</c>).</summary>
    public const long DefaultMaximumSize = 8L * 1024 * 1024;

    private readonly HashSet<string> _exact = new(StringComparer.OrdinalIgnoreCase);
    private readonly List<string> _prefixes = [];

    public CompressionPolicy(IEnumerable<string> contentTypes, long minimumSize, long maximumSize, int brotliQuality, int gzipLevel)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(minimumSize);
        ArgumentOutOfRangeException.ThrowIfLessThan(maximumSize, minimumSize);

        // A file is read into one array to be compressed.
        ArgumentOutOfRangeException.ThrowIfGreaterThan(maximumSize, Array.MaxLength);
        if (brotliQuality is < 0 or > 11)
        {
            throw new ArgumentOutOfRangeException(nameof(brotliQuality), brotliQuality, "Brotli quality must be 0 to 11.");
        }

        if (gzipLevel is < 1 or > 9)
        {
            throw new ArgumentOutOfRangeException(nameof(gzipLevel), gzipLevel, "The gzip level must be 1 to 9.");
        }

        foreach (string contentType in contentTypes)
        {
            string type = contentType.Trim();
            if (type.EndsWith("/*", StringComparison.Ordinal))
            {
                _prefixes.Add(type[..^1]);
            }
            else if (type.Length > 0)
            {
                _exact.Add(type);
            }
        }

        MinimumSize = minimumSize;
        MaximumSize = maximumSize;
        BrotliQuality = brotliQuality;
        GzipLevel = gzipLevel;
    }

    public long MinimumSize { get; }

    public long MaximumSize { get; }

    public int BrotliQuality { get; }

    public int GzipLevel { get; }

    /// <summary>Runs after a variant is encoded and before it is published (file path, coding token): a test seam.</summary>
    public Func<string, string, Task>? BeforePublish { get; init; }

    /// <summary>The codings a file of <paramref name="contentType"/> and <paramref name="length"/> bytes gets, else none.</summary>
    public ContentCodings CodingsFor(string? contentType, long length)
    {
        if (contentType is null || length < MinimumSize || length > MaximumSize)
        {
            return ContentCodings.None;
        }

        // The media type without parameters (RFC 9110 8.3.1): "text/html; charset=utf-8" is text/html.
        ReadOnlySpan<char> mediaType = contentType.AsSpan();
        int semicolon = mediaType.IndexOf(';');
        mediaType = (semicolon < 0 ? mediaType : mediaType[..semicolon]).Trim();
        if (_exact.GetAlternateLookup<ReadOnlySpan<char>>().Contains(mediaType))
        {
            return Sidecar.Producible;
        }

        foreach (string prefix in _prefixes)
        {
            if (mediaType.StartsWith(prefix, StringComparison.OrdinalIgnoreCase))
            {
                return Sidecar.Producible;
            }
        }

        return ContentCodings.None;
    }

    /// <summary>The encoded bytes, or <see langword="null"/> when encoding does not make them smaller.</summary>
    public byte[]? Compress(ContentCodings coding, ReadOnlySpan<byte> data)
        => coding switch
        {
            ContentCodings.Brotli => Brotli(data),
            ContentCodings.Gzip => Gzip(data),
            _ => throw new ArgumentOutOfRangeException(nameof(coding), coding, "Only brotli and gzip are produced."),
        };

    private byte[]? Brotli(ReadOnlySpan<byte> data)
    {
        // Encoding into a buffer only as large as the input: output that does not fit would not be worth keeping.
        byte[] buffer = ArrayPool<byte>.Shared.Rent(Math.Max(data.Length - 1, 1));
        try
        {
            return BrotliEncoder.TryCompress(data, buffer.AsSpan(0, Math.Max(data.Length - 1, 0)), out int written, BrotliQuality, BrotliWindow)
                ? buffer.AsSpan(0, written).ToArray()
                : null;
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }

    private byte[]? Gzip(ReadOnlySpan<byte> data)
    {
        using var output = new MemoryStream(data.Length / 4);
        using (var gzip = new GZipStream(output, new ZLibCompressionOptions { CompressionLevel = GzipLevel }, leaveOpen: true))
        {
            gzip.Write(data);
        }

        return output.Length < data.Length ? output.ToArray() : null;
    }
}
