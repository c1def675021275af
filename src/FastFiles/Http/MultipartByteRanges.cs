using System.Buffers.Text;
using System.Security.Cryptography;
using System.Text;

namespace FastFiles.Http;

/// <summary>
/// The layout of one multipart/byteranges body (RFC 9110 14.6, RFC 2046 5.1): a fresh boundary, each part's header
/// block (<c>Content-Type</c> when known, <c>Content-Range</c>) made up front, and so the exact Content-Length
/// before a byte is sent. The body is, for each part, its header block then its bytes, and finally the closing
/// delimiter; the CRLF before each later delimiter belongs to it (RFC 2046 5.1.1).
/// </summary>
/// <remarks>
/// Every header block and the closing delimiter share one array, and the boundary's random bytes come from a
/// per-thread buffer filled 85 boundaries at a time: building the layout per string and drawing each boundary from
/// the system's generator took 2 KB and 3% of a four-range response's CPU on the send path
/// (benchmarks/results/multipart-2026-11-26).
/// </remarks>
internal sealed class MultipartByteRanges
{
    private const string ContentTypePrefix = "multipart/byteranges; boundary=";
    private const int BoundaryBytes = 12;

    [ThreadStatic]
    private static byte[]? t_random;

    [ThreadStatic]
    private static int t_randomUsed;

    private MultipartByteRanges(string contentType, Part[] parts, ReadOnlyMemory<byte> closing, long contentLength, long rangeBytes)
    {
        ContentType = contentType;
        Parts = parts;
        Closing = closing;
        ContentLength = contentLength;
        RangeBytes = rangeBytes;
    }

    /// <summary>24 hex digits, new for every response, so no file's bytes can know it in advance.</summary>
    public string Boundary => ContentType[ContentTypePrefix.Length..];

    /// <summary>The response's Content-Type: <c>multipart/byteranges; boundary=...</c>.</summary>
    public string ContentType { get; }

    public Part[] Parts { get; }

    /// <summary>CRLF, the closing delimiter, CRLF.</summary>
    public ReadOnlyMemory<byte> Closing { get; }

    public long ContentLength { get; }

    /// <summary>The representation's bytes the parts carry: <see cref="ContentLength"/> without the header blocks and delimiters.</summary>
    public long RangeBytes { get; }

    /// <summary>
    /// Whether the parts carry, on average, at least <paramref name="minimumLength"/> bytes each: the length from which a
    /// single body is worth a sendfile(2) call of its own, applied per part, since each part costs one.
    /// </summary>
    public bool PartsReach(long minimumLength) => RangeBytes / Parts.Length >= minimumLength;

    /// <param name="ranges">The satisfiable, non-overlapping ranges, in the order they are to be sent.</param>
    /// <param name="length">The selected representation's length (the encoded length for a precompressed variant).</param>
    /// <param name="partContentType">The representation's media type, sent in each part; <see langword="null"/> omits it.</param>
    public static MultipartByteRanges Create(ByteRange[] ranges, long length, string? partContentType)
    {
        Span<byte> boundary = stackalloc byte[2 * BoundaryBytes];
        NewBoundary(boundary);
        Span<char> type = stackalloc char[ContentTypePrefix.Length + boundary.Length];
        ContentTypePrefix.CopyTo(type);
        Encoding.ASCII.GetChars(boundary, type[ContentTypePrefix.Length..]);

        // "\r\n" (after the first part) "--" boundary "\r\n" ["Content-Type: " type "\r\n"]
        // "Content-Range: bytes " start "-" last "/" length "\r\n\r\n"; then "\r\n--" boundary "--\r\n".
        int typeLine = partContentType is null ? 0 : "Content-Type: ".Length + partContentType.Length + 2;
        int fixedPart = 2 + boundary.Length + 2 + typeLine + "Content-Range: bytes ".Length + 1 + 1 + Digits(length) + 4;
        int closingLength = 4 + boundary.Length + 4;
        int total = closingLength;
        long contentLength = closingLength;
        long rangeBytes = 0;
        for (int i = 0; i < ranges.Length; i++)
        {
            int header = (i > 0 ? 2 : 0) + fixedPart + Digits(ranges[i].Start) + Digits(ranges[i].End - 1);
            total += header;
            contentLength += header + ranges[i].Count;
            rangeBytes += ranges[i].Count;
        }

        byte[] bytes = new byte[total];
        var parts = new Part[ranges.Length];
        int at = 0;
        for (int i = 0; i < ranges.Length; i++)
        {
            ByteRange range = ranges[i];
            int start = at;
            if (i > 0)
            {
                Append(bytes, ref at, "\r\n"u8);
            }

            Append(bytes, ref at, "--"u8);
            Append(bytes, ref at, boundary);
            Append(bytes, ref at, "\r\n"u8);
            if (partContentType is not null)
            {
                Append(bytes, ref at, "Content-Type: "u8);
                at += Encoding.Latin1.GetBytes(partContentType, bytes.AsSpan(at));
                Append(bytes, ref at, "\r\n"u8);
            }

            Append(bytes, ref at, "Content-Range: bytes "u8);
            AppendNumber(bytes, ref at, range.Start);
            Append(bytes, ref at, "-"u8);
            AppendNumber(bytes, ref at, range.End - 1);
            Append(bytes, ref at, "/"u8);
            AppendNumber(bytes, ref at, length);
            Append(bytes, ref at, "\r\n\r\n"u8);
            parts[i] = new Part(range, bytes.AsMemory(start, at - start));
        }

        int closing = at;
        Append(bytes, ref at, "\r\n--"u8);
        Append(bytes, ref at, boundary);
        Append(bytes, ref at, "--\r\n"u8);
        if (at != total)
        {
            throw new InvalidOperationException("The multipart layout's length was miscounted.");
        }

        return new MultipartByteRanges(new string(type), parts, bytes.AsMemory(closing), contentLength, rangeBytes);
    }

    /// <summary>Lowercase hex of 12 bytes from the system's cryptographic generator, drawn a buffer at a time.</summary>
    private static void NewBoundary(Span<byte> hex)
    {
        byte[]? random = t_random;
        if (random is null)
        {
            t_random = random = new byte[BoundaryBytes * 85];
            t_randomUsed = random.Length;
        }

        if (t_randomUsed == random.Length)
        {
            RandomNumberGenerator.Fill(random);
            t_randomUsed = 0;
        }

        ReadOnlySpan<byte> digits = "0123456789abcdef"u8;
        ReadOnlySpan<byte> taken = random.AsSpan(t_randomUsed, BoundaryBytes);
        t_randomUsed += BoundaryBytes;
        for (int i = 0; i < taken.Length; i++)
        {
            hex[2 * i] = digits[taken[i] >> 4];
            hex[(2 * i) + 1] = digits[taken[i] & 0xF];
        }
    }

    private static int Digits(long value)
    {
        int digits = 1;
        while (value >= 10)
        {
            value /= 10;
            digits++;
        }

        return digits;
    }

    private static void Append(byte[] bytes, ref int at, ReadOnlySpan<byte> text)
    {
        text.CopyTo(bytes.AsSpan(at));
        at += text.Length;
    }

    private static void AppendNumber(byte[] bytes, ref int at, long value)
    {
        Utf8Formatter.TryFormat(value, bytes.AsSpan(at), out int written);
        at += written;
    }

    /// <summary>One part: its header block (starting with the delimiter) and the range of the representation it carries.</summary>
    internal readonly record struct Part(ByteRange Range, ReadOnlyMemory<byte> Header);
}
