using Microsoft.Net.Http.Headers;

namespace Microsoft.AspNetCore.Http;

/// <summary>Factory methods for FastFiles' results, in the style of <c>Results.File</c>.</summary>
public static class FastResults
{
    /// <summary>
    /// Sends the file at an absolute <paramref name="path"/>; see <see cref="FastPhysicalFileResult"/>. The parameters are
    /// those of <c>Results.File(path, contentType, fileDownloadName, lastModified, entityTag, enableRangeProcessing)</c>,
    /// in the same order.
    /// </summary>
    /// <param name="path">An absolute path to the file.</param>
    /// <param name="contentType">The Content-Type; <see langword="null"/> (the default) infers it from the extension.</param>
    /// <param name="fileDownloadName">A download name for Content-Disposition; <see langword="null"/> (the default) sends none.</param>
    /// <param name="lastModified">
    /// The Last-Modified to send and evaluate conditions against; see <see cref="FastPhysicalFileResult.LastModified"/>.
    /// Defaults to <see langword="null"/>: the file's modification time.
    /// </param>
    /// <param name="entityTag">
    /// The ETag (weak or strong) to send and evaluate conditions against; see <see cref="FastPhysicalFileResult.EntityTag"/>.
    /// Defaults to <see langword="null"/>: FastFiles' own strong ETag.
    /// </param>
    /// <param name="enableRangeProcessing">Whether Range requests are honoured. Defaults to <see langword="true"/>.</param>
    /// <returns>A result usable from minimal APIs and MVC.</returns>
    /// <exception cref="ArgumentException">
    /// <paramref name="path"/> is empty or not absolute, or <paramref name="entityTag"/> is not one a request could name
    /// (see <see cref="FastPhysicalFileResult.EntityTag"/>).
    /// </exception>
    public static FastPhysicalFileResult PhysicalFile(
        string path, string? contentType = null, string? fileDownloadName = null, DateTimeOffset? lastModified = null, EntityTagHeaderValue? entityTag = null,
        bool enableRangeProcessing = true)
        => new(path, contentType) { FileDownloadName = fileDownloadName, LastModified = lastModified, EntityTag = entityTag, EnableRangeProcessing = enableRangeProcessing };

    /// <summary>
    /// As <see cref="PhysicalFile(string, string?, string?, DateTimeOffset?, EntityTagHeaderValue?, bool)"/> without
    /// validators of the application's (a positional call with three arguments binds here).
    /// </summary>
    /// <param name="path">An absolute path to the file.</param>
    /// <param name="contentType">The Content-Type; <see langword="null"/> infers it from the extension.</param>
    /// <param name="fileDownloadName">A download name for Content-Disposition; <see langword="null"/> sends none.</param>
    /// <param name="enableRangeProcessing">Whether Range requests are honoured.</param>
    /// <returns>A result usable from minimal APIs and MVC.</returns>
    /// <exception cref="ArgumentException"><paramref name="path"/> is empty or not absolute.</exception>
    public static FastPhysicalFileResult PhysicalFile(string path, string? contentType, string? fileDownloadName, bool enableRangeProcessing)
        => new(path, contentType) { FileDownloadName = fileDownloadName, EnableRangeProcessing = enableRangeProcessing };

    /// <summary>
    /// Sends the file at <paramref name="relativePath"/> under <paramref name="root"/>, resolved the way <c>UseFastFiles</c>
    /// resolves request paths: <c>.</c>/<c>..</c> segments, backslashes, NUL and dotfiles are refused, the path is
    /// appended to the root (an absolute-looking value stays under it), and a file whose real location is outside the
    /// root (through a symbolic link, at any depth) is a 404. Use it for paths that come from a request (route values,
    /// query strings) instead of combining and comparing path strings yourself.
    /// </summary>
    /// <param name="root">An absolute path to the directory files are served from.</param>
    /// <param name="relativePath">The file's path under <paramref name="root"/>, with <c>/</c> separators (a leading <c>/</c> is optional).</param>
    /// <param name="contentType">The Content-Type; <see langword="null"/> (the default) infers it from the extension.</param>
    /// <param name="fileDownloadName">A download name for Content-Disposition; <see langword="null"/> (the default) sends none.</param>
    /// <param name="enableRangeProcessing">Whether Range requests are honoured. Defaults to <see langword="true"/>.</param>
    /// <param name="enableDynamicCompression">
    /// Whether compressible files are also sent brotli- or gzip-encoded, compressed once per file version, as
    /// <c>UseFastFiles</c> does with <c>EnableDynamicCompression</c>; see <see cref="FastPhysicalFileResult.EnableDynamicCompression"/>.
    /// Defaults to <see langword="false"/>.
    /// </param>
    /// <param name="enableContentHashETags">
    /// Whether the ETag is the content hash of the bytes, as <c>UseFastFiles</c> sends with <c>EnableContentHashETags</c>;
    /// see <see cref="FastPhysicalFileResult.EnableContentHashETags"/>. Defaults to <see langword="false"/>.
    /// </param>
    /// <param name="lastModified">
    /// The Last-Modified to send and evaluate; see <see cref="FastPhysicalFileResult.LastModified"/>. Defaults to
    /// <see langword="null"/>: the file's modification time.
    /// </param>
    /// <param name="entityTag">
    /// The ETag to send and evaluate (weak or strong); see <see cref="FastPhysicalFileResult.EntityTag"/>. Defaults to
    /// <see langword="null"/>: FastFiles' own strong ETag.
    /// </param>
    /// <returns>A result usable from minimal APIs and MVC; a 404 when the path is refused or names no regular file.</returns>
    /// <exception cref="ArgumentException">
    /// <paramref name="root"/> is empty or not absolute, or <paramref name="entityTag"/> is not one a request could name
    /// (see <see cref="FastPhysicalFileResult.EntityTag"/>).
    /// </exception>
    public static FastPhysicalFileResult File(
        string root, string relativePath, string? contentType = null, string? fileDownloadName = null, bool enableRangeProcessing = true,
        bool enableDynamicCompression = false, bool enableContentHashETags = false, DateTimeOffset? lastModified = null, EntityTagHeaderValue? entityTag = null)
        => new(root, relativePath, contentType)
        {
            LastModified = lastModified,
            EntityTag = entityTag,
            FileDownloadName = fileDownloadName,
            EnableRangeProcessing = enableRangeProcessing,
            EnableDynamicCompression = enableDynamicCompression,
            EnableContentHashETags = enableContentHashETags,
        };

    /// <summary>
    /// As <see cref="File(string, string, string?, string?, bool, bool, bool, DateTimeOffset?, EntityTagHeaderValue?)"/>
    /// without validators of the application's (a positional call with up to seven arguments binds here).
    /// </summary>
    /// <param name="root">An absolute path to the directory files are served from.</param>
    /// <param name="relativePath">The file's path under <paramref name="root"/>.</param>
    /// <param name="contentType">The Content-Type; <see langword="null"/> infers it from the extension.</param>
    /// <param name="fileDownloadName">A download name for Content-Disposition; <see langword="null"/> sends none.</param>
    /// <param name="enableRangeProcessing">Whether Range requests are honoured.</param>
    /// <param name="enableDynamicCompression">Whether compressible files are also sent brotli- or gzip-encoded.</param>
    /// <param name="enableContentHashETags">Whether the ETag is the content hash of the bytes.</param>
    /// <returns>A result usable from minimal APIs and MVC; a 404 when the path is refused or names no regular file.</returns>
    /// <exception cref="ArgumentException"><paramref name="root"/> is empty or not absolute.</exception>
    public static FastPhysicalFileResult File(
        string root, string relativePath, string? contentType, string? fileDownloadName, bool enableRangeProcessing, bool enableDynamicCompression,
        bool enableContentHashETags)
        => File(root, relativePath, contentType, fileDownloadName, enableRangeProcessing, enableDynamicCompression, enableContentHashETags, null, null);
}
