using System.Globalization;
using System.Security.Cryptography;
using System.Text;

namespace FastFiles.Http;

/// <summary>
/// The layout of one multipart/byteranges body (RFC 9110 14.6, RFC 2046 5.1): a fresh boundary, each part's header
/// block (<c>Content-Type</c> when known, <c>Content-Range</c>) made up front, and so the exact Content-Length
/// before a byte is sent. The body is, for each part, its header block then its bytes, and finally the closing
/// delimiter; the CRLF before each later delimiter belongs to it (RFC 2046 5.1.1).
/// </summary>
internal sealed class MultipartByteRanges
{
    private MultipartByteRanges(string boundary, Part[] parts, byte[] closing)
    {
        Boundary = boundary;
        ContentType = "multipart/byteranges; boundary=" + boundary;
        Parts = parts;
        Closing = closing;
        long total = closing.Length;
        foreach (Part part in parts)
        {
            total += part.Header.Length + part.Range.Count;
        }

        ContentLength = total;
    }

    /// <summary>24 hex digits, new for every response, so no file's bytes can know it in advance.</summary>
    public string Boundary { get; }

    /// <summary>The response's Content-Type: <c>multipart/byteranges; boundary=...</c>.</summary>
    public string ContentType { get; }

    public Part[] Parts { get; }

    /// <summary>CRLF, the closing delimiter, CRLF.</summary>
    public byte[] Closing { get; }

    public long ContentLength { get; }

    /// <param name="ranges">The satisfiable, non-overlapping ranges, in the order they are to be sent.</param>
    /// <param name="length">The selected representation's length (the encoded length for a precompressed variant).</param>
    /// <param name="partContentType">The representation's media type, sent in each part; <see langword="null"/> omits it.</param>
    public static MultipartByteRanges Create(ByteRange[] ranges, long length, string? partContentType)
    {
        string boundary = RandomNumberGenerator.GetHexString(24, lowercase: true);
        var parts = new Part[ranges.Length];
        var header = new StringBuilder();
        for (int i = 0; i < ranges.Length; i++)
        {
            ByteRange range = ranges[i];
            header.Clear();
            if (i > 0)
            {
                header.Append("\r\n");
            }

            header.Append("--").Append(boundary).Append("\r\n");
            if (partContentType is not null)
            {
                header.Append("Content-Type: ").Append(partContentType).Append("\r\n");
            }

            header.Append(CultureInfo.InvariantCulture, $"Content-Range: bytes {range.Start}-{range.End - 1}/{length}\r\n\r\n");
            parts[i] = new Part(range, Encoding.Latin1.GetBytes(header.ToString()));
        }

        return new MultipartByteRanges(boundary, parts, Encoding.ASCII.GetBytes("\r\n--" + boundary + "--\r\n"));
    }

    /// <summary>One part: its header block (starting with the delimiter) and the range of the representation it carries.</summary>
    internal readonly record struct Part(ByteRange Range, byte[] Header);
}
