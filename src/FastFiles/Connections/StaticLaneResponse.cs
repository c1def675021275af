using System.Buffers;
using System.Buffers.Text;
using System.Globalization;
using System.Text;
using FastFiles.Files;
using FastFiles.Http;

namespace FastFiles.Connections;

/// <summary>
/// The response bytes for one file version (identity or one precompressed sidecar) under one lane root, built once
/// and shared by every request for that version: status lines and header blocks for 200, 206, 304 and 416, laid out
/// in the order Kestrel writes them, so lane responses are byte-identical to <c>UseFastFiles</c>' (except Date).
/// </summary>
/// <remarks>
/// Kestrel writes Content-Length first, then Connection, Content-Type, Date and Server, then the other fields in
/// name order; the functional differential tests compare both byte for byte.
/// </remarks>
internal sealed class StaticLaneResponse
{
    private static readonly byte[] ConnectionClose = "Connection: close\r\n"u8.ToArray();
    private static readonly byte[] ServerKestrel = "Server: Kestrel\r\n"u8.ToArray();

    private readonly byte[] _okHead;
    private readonly byte[] _contentType;
    private readonly byte[] _okTail;
    private readonly byte[] _notModifiedTail;
    private readonly byte[] _partialMiddle;
    private readonly byte[] _partialTail;
    private readonly byte[] _unsatisfiableTail;
    private readonly byte[] _lengthSuffix;

    public StaticLaneResponse(FileVersion version, FileResponseSettings settings, bool serverHeader)
    {
        Version = version;
        Body = version.Content;

        // The fields and values come from the same plans the middleware applies to Kestrel's headers; only the byte
        // layout (Kestrel's order) is the lane's. The 304 takes its values from the 200, so both carry the tag read once
        // (a content-hash tag may arrive while this is built).
        FileResponsePlan ok = FileResponsePlan.Representation(version, settings);
        FileResponsePlan notModified = ok.AsNotModified();
        ETag = ok.ETag;
        byte[] server = serverHeader ? ServerKestrel : [];
        _okHead = Ascii(string.Create(CultureInfo.InvariantCulture, $"HTTP/1.1 200 OK\r\nContent-Length: {ok.ContentLength}\r\n"));
        _contentType = ok.ContentType is null ? [] : Ascii($"Content-Type: {ok.ContentType}\r\n");
        _okTail = [.. server, .. Ascii(FieldsAfterServer(ok, contentRangeAt: false) + "\r\n")];
        _notModifiedTail = [.. server, .. Ascii(FieldsAfterServer(notModified, contentRangeAt: false) + "\r\n")];

        // A 206 carries the 200's fields plus Content-Range, written per request where the name order puts it.
        string partial = FieldsAfterServer(ok, contentRangeAt: true);
        int range = partial.IndexOf(ContentRangeMark, StringComparison.Ordinal);
        _partialMiddle = [.. server, .. Ascii(partial[..range] + "Content-Range: bytes ")];
        _partialTail = Ascii(partial[(range + ContentRangeMark.Length)..] + "\r\n");
        _lengthSuffix = Ascii(string.Create(CultureInfo.InvariantCulture, $"/{version.Length}\r\n"));
        _unsatisfiableTail = [.. server, .. Ascii(string.Create(CultureInfo.InvariantCulture, $"Content-Range: bytes */{version.Length}\r\n")
            + (ok.Vary is null ? string.Empty : $"Vary: {ok.Vary}\r\n") + "\r\n")];
    }

    private const string ContentRangeMark = "\0range\0";

    /// <summary>
    /// The plan's fields that Kestrel writes after Server, in its order: its known fields by name (Accept-Ranges,
    /// Cache-Control, Content-Encoding, Content-Range, ETag, Last-Modified, Vary), then the others (Content-Disposition).
    /// With <paramref name="contentRangeAt"/>, a mark stands where Content-Range goes.
    /// </summary>
    private static string FieldsAfterServer(in FileResponsePlan plan, bool contentRangeAt)
    {
        var fields = new StringBuilder();
        Field(fields, "Accept-Ranges", plan.AcceptRanges);
        Field(fields, "Cache-Control", plan.CacheControl);
        Field(fields, "Content-Encoding", plan.ContentEncoding);
        if (contentRangeAt)
        {
            fields.Append(ContentRangeMark);
        }

        Field(fields, "ETag", plan.ETag);
        Field(fields, "Last-Modified", plan.LastModified);
        Field(fields, "Vary", plan.Vary);
        Field(fields, "Content-Disposition", plan.ContentDisposition);
        return fields.ToString();
    }

    private static void Field(StringBuilder fields, string name, string? value)
    {
        if (value is not null)
        {
            fields.Append(name).Append(": ").Append(value).Append("\r\n");
        }
    }

    public FileVersion Version { get; }

    /// <summary>
    /// The strong validator these bytes carry; <see langword="null"/> while the version's content hash is being
    /// computed (the bytes are then never sent: the request goes to the app, as <c>UseFastFiles</c> would answer it).
    /// </summary>
    public string? ETag { get; }

    /// <summary>The whole body when the cache holds it; null for files over the cache's size limit.</summary>
    public byte[]? Body { get; }

    /// <summary>200, with the body when the cache holds it and <paramref name="withBody"/> (not for HEAD, nor a body sent from the file).</summary>
    public long WriteOk(IBufferWriter<byte> output, ReadOnlySpan<byte> date, bool close, bool withBody)
    {
        long written = Write(output, _okHead) + WriteConnection(output, close) + Write(output, _contentType) + Write(output, date) + Write(output, _okTail);
        if (withBody && Body is not null)
        {
            written += Write(output, Body);
        }

        return written;
    }

    /// <summary>304 with the validators and caching fields a 200 would have carried (RFC 9110 15.4.5).</summary>
    public long WriteNotModified(IBufferWriter<byte> output, ReadOnlySpan<byte> date, bool close)
        => Write(output, "HTTP/1.1 304 Not Modified\r\n"u8) + WriteConnection(output, close) + Write(output, date) + Write(output, _notModifiedTail);

    /// <summary>206 for one range (RFC 9110 15.3.7), with the range's bytes when the cache holds the body and <paramref name="withBody"/>.</summary>
    public long WritePartial(IBufferWriter<byte> output, ReadOnlySpan<byte> date, bool close, long start, long count, bool withBody)
    {
        long written = Write(output, "HTTP/1.1 206 Partial Content\r\nContent-Length: "u8) + WriteNumber(output, count) + Write(output, "\r\n"u8)
            + WriteConnection(output, close) + Write(output, _contentType) + Write(output, date) + Write(output, _partialMiddle)
            + WriteNumber(output, start) + Write(output, "-"u8) + WriteNumber(output, start + count - 1) + Write(output, _lengthSuffix)
            + Write(output, _partialTail);
        return Body is null || !withBody ? written : written + Write(output, Body.AsSpan((int)start, (int)count));
    }

    /// <summary>416 with the representation's length (RFC 9110 15.5.17).</summary>
    public long WriteUnsatisfiable(IBufferWriter<byte> output, ReadOnlySpan<byte> date, bool close)
        => Write(output, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\n"u8) + WriteConnection(output, close) + Write(output, date)
            + Write(output, _unsatisfiableTail);

    private static int WriteConnection(IBufferWriter<byte> output, bool close) => close ? Write(output, ConnectionClose) : 0;

    private static int Write(IBufferWriter<byte> output, ReadOnlySpan<byte> bytes)
    {
        output.Write(bytes);
        return bytes.Length;
    }

    private static int WriteNumber(IBufferWriter<byte> output, long value)
    {
        Span<byte> span = output.GetSpan(20);
        Utf8Formatter.TryFormat(value, span, out int length);
        output.Advance(length);
        return length;
    }

    // Header values FastFiles produces are ASCII (content types and Cache-Control come from options; Kestrel would
    // reject anything else when it writes them).
    private static byte[] Ascii(string value) => Encoding.ASCII.GetBytes(value);
}
