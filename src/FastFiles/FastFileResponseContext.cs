using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.FileProviders.Physical;

namespace Microsoft.AspNetCore.Builder;

/// <summary>What <see cref="FastStaticFileOptions.OnPrepareResponse"/> is given about the response being prepared.</summary>
public sealed class FastFileResponseContext
{
    private readonly IFileInfo? _file;
    private readonly string? _requestedPhysicalPath;
    private IFileInfo? _lazyFile;

    internal FastFileResponseContext(HttpContext context, string? physicalPath, IFileInfo? file, string? contentEncoding, string? requestedPhysicalPath = null)
    {
        Context = context;
        PhysicalPath = physicalPath;
        _file = file;
        ContentEncoding = contentEncoding;
        _requestedPhysicalPath = requestedPhysicalPath ?? physicalPath;
    }

    /// <summary>The request being answered.</summary>
    public HttpContext Context { get; }

    /// <summary>The path on disk of the file being sent (a precompressed sidecar when one was chosen), or <see langword="null"/> for non-physical providers.</summary>
    public string? PhysicalPath { get; }

    /// <summary>The content coding of the representation being sent (<c>br</c>, <c>zstd</c>, <c>gzip</c>), or <see langword="null"/>.</summary>
    public string? ContentEncoding { get; }

    /// <summary>
    /// The file requested, as an <see cref="IFileInfo"/> (created on first use for physical files), as
    /// <c>StaticFileResponseContext.File</c> is: the original also when a precompressed sidecar is sent in its place
    /// (<see cref="PhysicalPath"/> and <see cref="ContentEncoding"/> name that), so a policy keyed by the file's name
    /// answers alike for every client. For a sidecar with no physical path (an embedded provider), the sidecar.
    /// </summary>
    public IFileInfo File => _lazyFile ??= Requested();

    private IFileInfo Requested()
    {
        if (_requestedPhysicalPath is null)
        {
            return _file!;
        }

        return _file is not null && string.Equals(_requestedPhysicalPath, PhysicalPath, StringComparison.Ordinal)
            ? _file
            : new PhysicalFileInfo(new FileInfo(_requestedPhysicalPath));
    }
}
