namespace Microsoft.AspNetCore.Http;

/// <summary>
/// URLs of files served by <c>UseFastFiles</c> with their content hash in them (<c>/css/site.css?v=LPJNul-wow4m6Dsqxbning</c>),
/// for files that exist only at run time (uploads, generated reports): no build step. A request for such a URL is
/// answered with <c>Cache-Control: public, max-age=31536000, immutable</c> only while the hash names the file's
/// current bytes; a request with a stale hash is redirected (302, <c>Cache-Control: no-cache</c>) to the current
/// URL, so new bytes are never cached as immutable under an old URL. Registered by <c>AddFastFiles</c>; covers the
/// roots of <c>UseFastFiles</c> with <c>EnableContentHashETags</c> and the file cache on.
/// </summary>
public interface IFastFilesFingerprinter
{
    /// <summary>
    /// <paramref name="path"/> (app-relative, for example <c>/assets/site.css</c>) with <c>?v=</c> and the content
    /// hash appended; <paramref name="path"/> unchanged when no fingerprinting root serves it (or it has a query),
    /// or when the hash of a large file is still being computed (it is started, so a later call gets it).
    /// </summary>
    /// <param name="path">The request path of the file, without path base.</param>
    /// <returns>The fingerprinted URL, or <paramref name="path"/>.</returns>
    string GetUrl(string path);

    /// <summary>As <see cref="GetUrl"/>, but waits for a large file's hash instead of returning the plain path.</summary>
    /// <param name="path">The request path of the file, without path base.</param>
    /// <param name="cancellationToken">Stops waiting.</param>
    /// <returns>The fingerprinted URL, or <paramref name="path"/> when no fingerprinting root serves it.</returns>
    ValueTask<string> GetUrlAsync(string path, CancellationToken cancellationToken = default);
}
