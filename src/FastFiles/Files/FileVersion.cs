using System.Buffers.Binary;
using System.Globalization;
using System.Security.Cryptography;
using Microsoft.Extensions.FileProviders;
using Microsoft.Net.Http.Headers;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Files;

/// <summary>
/// One version of one representation (the file itself or a precompressed sidecar): its stamp, its validators,
/// the header strings derived from them (materialized once and reused for every response to this version), and
/// for small cached files the bytes themselves. Validators always come from the opened file, so headers
/// describe the bytes sent.
/// </summary>
internal sealed class FileVersion : IDisposable
{
    // The stamp's tag, or one an application gave (a result's EntityTag), sent and compared as given.
    private string _stampETag;

    private FileVersion(
        string? physicalPath,
        SafeFileHandle? handle,
        IFileInfo? fileInfo,
        FileStamp stamp,
        string? contentEncoding,
        byte[]? content,
        string? etag = null,
        string? lastModifiedHeader = null,
        SharedFileHandle? sharedHandle = null,
        ContentHash? contentHash = null,
        DateTimeOffset? lastModified = null)
    {
        SharedHandle = sharedHandle;
        ContentHash = contentHash;
        PhysicalPath = physicalPath;
        Handle = handle;
        FileInfo = fileInfo;
        Stamp = stamp;
        ContentEncoding = contentEncoding;
        Content = content;

        // Last-Modified has one-second resolution (RFC 9110 5.6.7), and is never later than Date (8.8.2.1): a
        // modification time in the future (a clock ahead where the file was written) gives way to the inode's change
        // time (when the file got that time, by this machine's clock) or a time fixed for the process, so every response
        // of this version, cached or opened afresh, and every condition sees one value. The ETag keeps the file's time.
        long ticks = stamp.ModifiedTicks;
        LastModified = lastModified ?? LastModifiedOf(ticks, ChangeTicks(stamp));
        LastModifiedHeader = lastModifiedHeader ?? HeaderUtilities.FormatDate(LastModified);
        _dateLagUntil = DateLagUntil(LastModified);
        _stampETag = etag ?? FormatETag(ticks, stamp.Length, contentEncoding);
    }

    public string? PhysicalPath { get; }

    /// <summary>The open file, when this version was opened for one request; owned by this instance.</summary>
    public SafeFileHandle? Handle { get; private set; }

    /// <summary>A descriptor the file cache keeps open for this version across requests, when it holds one.</summary>
    public SharedFileHandle? SharedHandle { get; }

    /// <summary>The provider's file, for providers without physical paths (embedded files and the like).</summary>
    public IFileInfo? FileInfo { get; }

    public FileStamp Stamp { get; }

    public long Length => Stamp.Length;

    public DateTimeOffset LastModified { get; private set; }

    public string LastModifiedHeader { get; private set; }

    // Kestrel refreshes its Date once a second (on its heartbeat), so for a second or so after a file is written a
    // response can carry a Last-Modified one second after its Date, which RFC 9110 8.8.2.1 forbids. Until this time
    // (UTC ticks; 0 once past) responses set Date from the clock. The margin allows for a heartbeat running late.
    private long _dateLagUntil;

    private static readonly long s_dateLagWindow = 5 * TimeSpan.TicksPerSecond;

    private static long DateLagUntil(DateTimeOffset lastModified)
    {
        long until = lastModified.UtcTicks + s_dateLagWindow;
        return until > DateTime.UtcNow.Ticks ? until : 0;
    }

    /// <summary>
    /// Whether a response sent now must set its own Date: Kestrel's may still be earlier than
    /// <see cref="LastModified"/>. False, without reading the clock, for every version older than a few seconds.
    /// </summary>
    public bool DateMayPrecedeLastModified()
    {
        long until = _dateLagUntil;
        if (until == 0)
        {
            return false;
        }

        if (DateTime.UtcNow.Ticks < until)
        {
            return true;
        }

        _dateLagUntil = 0;
        return false;
    }

    /// <summary>
    /// A strong validator (RFC 9110 8.8.3): the content hash's tag when this version has one, else the stamp's;
    /// or the tag an application gave (<see cref="UseValidators"/>), which may be weak (<c>W/"..."</c>).
    /// <see langword="null"/> while a content hash is being computed (see <see cref="Files.ContentHash"/>).
    /// </summary>
    public string? ETag => ContentHash is null ? _stampETag : ContentHash.ETag;

    /// <summary>The content-hash validator of this version, when content-hash ETags are on.</summary>
    public ContentHash? ContentHash { get; private set; }

    /// <summary><c>br</c>, <c>zstd</c>, <c>gzip</c>, or <see langword="null"/> for the identity representation.</summary>
    public string? ContentEncoding { get; }

    /// <summary>The whole body, for versions held by the content cache; sent with no file-system call.</summary>
    public byte[]? Content { get; }

    /// <summary>Opens <paramref name="path"/> and reads its stamp from the handle (fstat), not the path.</summary>
    /// <exception cref="IOException">The file does not exist or cannot be opened as a file.</exception>
    /// <exception cref="UnauthorizedAccessException">The path is a directory or is not readable.</exception>
    public static FileVersion Open(string path, string? contentEncoding)
    {
        SafeFileHandle handle = OpenHandle(path, out FileStamp stamp);
        try
        {
            return new FileVersion(path, handle, null, stamp, contentEncoding, null);
        }
        catch
        {
            handle.Dispose();
            throw;
        }
    }

    /// <summary>
    /// Opens <paramref name="path"/> for reading when it is a regular file (or a directory, which the open then refuses as
    /// .NET does). Anything else is not found and never opened: open(2) of a FIFO for reading blocks until a writer comes,
    /// which would hold a thread for as long as a client likes, and a device or socket is no file to serve.
    /// </summary>
    /// <exception cref="FileNotFoundException">Nothing there, or not a regular file.</exception>
    public static SafeFileHandle OpenHandle(string path) => OpenHandle(path, out _);

    /// <summary>As <see cref="OpenHandle(string)"/>, with the stamp of the opened descriptor (fstat, not the path).</summary>
    public static SafeFileHandle OpenHandle(string path, out FileStamp stamp)
    {
        // As .NET refuses it: open(2) would see the path cut at the NUL, so an app's check of "report.txt\0.pdf" as a PDF
        // would send report.txt.
        if (path.Contains('\0'))
        {
            throw new ArgumentException("Null character in path.", nameof(path));
        }

        // Nothing but a file or a directory is opened: opening some devices acts (a watchdog starts, a tape rewinds),
        // and a symbolic link under a root could point at one. On Linux the type is read again from the descriptor
        // (RegularFileOpener), so nothing swapped in after this look is served or waited on.
        if (!FileStamp.TryGet(path, out _))
        {
            throw new FileNotFoundException("Not a regular file.", path);
        }

        if (RegularFileOpener.Supported && RegularFileOpener.Open(path, out stamp) is { } opened)
        {
            return opened;
        }

        SafeFileHandle handle = File.OpenHandle(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        try
        {
            stamp = FileStamp.FromHandle(handle);
            return handle;
        }
        catch
        {
            handle.Dispose();
            throw;
        }
    }

    public static FileVersion FromProvider(IFileInfo fileInfo, string? contentEncoding)
        => new(null, null, fileInfo, FileStamp.FromTicks(fileInfo.Length, fileInfo.LastModified.UtcTicks), contentEncoding, null);

    /// <summary>
    /// A copy for the cache without this instance's handle, sharing its header strings, optionally with its bytes
    /// or a descriptor kept open across requests.
    /// </summary>
    public FileVersion ForCache(byte[]? content, SharedFileHandle? sharedHandle = null, ContentHash? contentHash = null)
        => new(PhysicalPath, null, null, Stamp, ContentEncoding, content, _stampETag, LastModifiedHeader, sharedHandle, contentHash, LastModified);

    /// <summary>
    /// A content-coded variant of this (identity) version made in memory: <paramref name="content"/> are the encoded
    /// bytes. It keeps this version's Last-Modified, and its strong ETag is the identity's modification time with the
    /// encoded length and the coding (or the content hash of the encoded bytes), so each coding of each version has
    /// its own tag, as sidecars do (RFC 9110 8.8.3.3).
    /// </summary>
    public FileVersion CompressedVariant(byte[] content, string contentEncoding, ContentHash? contentHash)
    {
        FileStamp stamp = Stamp with { Length = content.Length };
        // The encoded bytes depend on the compressor (quality, level, library version), not only on the file: the tag
        // names them, so two servers or two runs that encode one version differently never share a strong tag (8.8.3).
        string etag = VariantETag(Stamp.ModifiedTicks, content, contentEncoding);
        return new FileVersion(PhysicalPath, null, null, stamp, contentEncoding, content, etag, LastModifiedHeader, null, contentHash, LastModified);
    }

    /// <summary><c>"mtime-length-digest-coding"</c>: the identity's modification time, the encoded length, 64 bits of SHA-256 of the encoded bytes.</summary>
    internal static string VariantETag(long lastWriteTicks, ReadOnlySpan<byte> encoded, string contentEncoding)
    {
        Span<byte> digest = stackalloc byte[SHA256.HashSizeInBytes];
        SHA256.HashData(encoded, digest);
        ulong bits = BinaryPrimitives.ReadUInt64BigEndian(digest);
        return string.Create(CultureInfo.InvariantCulture, $"\"{lastWriteTicks:x}-{encoded.Length:x}-{bits:x16}-{contentEncoding}\"");
    }

    /// <summary>Gives a version opened for one request its content-hash validator (before any response uses it).</summary>
    public void UseContentHash(ContentHash contentHash) => ContentHash = contentHash;

    /// <summary>
    /// Gives a version opened for one request the validators an application chose (before any response uses it):
    /// <paramref name="lastModified"/> (to the second, RFC 9110 5.6.7) and <paramref name="etag"/> (quoted, <c>W/</c>
    /// for a weak one) replace the file's own, for the headers sent and for every condition evaluated.
    /// </summary>
    public void UseValidators(DateTimeOffset? lastModified, string? etag)
    {
        if (lastModified is { } date)
        {
            LastModified = LastModifiedOf(date.UtcTicks, 0);
            LastModifiedHeader = HeaderUtilities.FormatDate(LastModified);
            _dateLagUntil = DateLagUntil(LastModified);
        }

        if (etag is not null)
        {
            // The application's tag replaces the file's (and a content hash's) for this version only.
            ContentHash = null;
            _stampETag = new string(etag.AsSpan());
        }
    }

    /// <summary>Hands this version's handle to the caller, which then owns it; this instance no longer closes it.</summary>
    public SafeFileHandle? TakeHandle()
    {
        SafeFileHandle? handle = Handle;
        Handle = null;
        return handle;
    }

    /// <summary>The ETag as a string of its own (for <c>DisableStringReuse</c>).</summary>
    public string? FreshETag()
        => ETag is { } etag ? new string(etag.AsSpan()) : null;

    /// <summary>The Last-Modified value formatted afresh (for <c>DisableStringReuse</c>).</summary>
    public string FreshLastModifiedHeader() => HeaderUtilities.FormatDate(LastModified);

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

    /// <summary><paramref name="ticks"/> to the whole second below (Last-Modified's resolution, RFC 9110 5.6.7).</summary>
    internal static long Seconds(long ticks) => ticks - (ticks % TimeSpan.TicksPerSecond);

    private static DateTimeOffset LastModifiedOf(long ticks, long changed) => new(Seconds(NotInTheFuture(ticks, changed)), TimeSpan.Zero);

    // Stands in for a future time that has no usable change time: fixed for the process, so responses opened afresh
    // agree (a date that moved between two responses would fail If-Unmodified-Since on an unchanged file), and a second
    // before the first version was made, so never after any Date Kestrel sends.
    private static readonly long s_firstVersionTicks = DateTime.UtcNow.Ticks - TimeSpan.TicksPerSecond;

    // RFC 9110 8.8.2.1: a time later than now is replaced, by the second before the change time's when that is after 1970
    // and not in the future (Kestrel refreshes Date once a second, so Date may lag the clock by that much), else by a time
    // fixed for the process. A time that is not in the future is kept as it is, as UseStaticFiles and nginx keep it (a file written
    // within the second before Date was refreshed may then be dated a second after Date).
    private static long NotInTheFuture(long ticks, long changed)
    {
        long now = DateTime.UtcNow.Ticks;
        if (ticks <= now)
        {
            return ticks;
        }

        // The change time, to the second and a second earlier: no later than any Date Kestrel sends from the change on (its
        // Date lags the clock by up to a second), fixed by the stamp for the version's lifetime, and never before the
        // dates of earlier versions but within a second or two of them. (Waiting for a change time to be a second
        // old and falling back to the process's time meanwhile dated a version written now before versions the process
        // served earlier, so If-Modified-Since from their copies was a 304.)
        return changed > DateTime.UnixEpoch.Ticks + TimeSpan.TicksPerSecond && changed <= now
            ? Seconds(changed) - TimeSpan.TicksPerSecond
            : s_firstVersionTicks;
    }

    // The inode's change time in ticks (statx ctime; for provider files the modification time again, which is then in
    // the future too and not used).
    private static long ChangeTicks(FileStamp stamp) => DateTime.UnixEpoch.Ticks + (stamp.ChangedNanoseconds / 100);
}
