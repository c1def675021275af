namespace Microsoft.AspNetCore.Http;

/// <summary>Factory methods for FastFiles' results, in the style of <c>Results.File</c>.</summary>
public static class FastResults
{
    /// <summary>Sends the file at an absolute <paramref name="path"/>; see <see cref="FastPhysicalFileResult"/>.</summary>
    /// <param name="path">An absolute path to the file.</param>
    /// <param name="contentType">The Content-Type; <see langword="null"/> (the default) infers it from the extension.</param>
    /// <param name="fileDownloadName">A download name for Content-Disposition; <see langword="null"/> (the default) sends none.</param>
    /// <param name="enableRangeProcessing">Whether Range requests are honoured. Defaults to <see langword="true"/>.</param>
    /// <returns>A result usable from minimal APIs and MVC.</returns>
    public static FastPhysicalFileResult PhysicalFile(string path, string? contentType = null, string? fileDownloadName = null, bool enableRangeProcessing = true)
        => new(path, contentType) { FileDownloadName = fileDownloadName, EnableRangeProcessing = enableRangeProcessing };
}
