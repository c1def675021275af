using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.FileProviders;
using Microsoft.Extensions.FileProviders.Physical;

namespace Microsoft.AspNetCore.Builder;

/// <summary>What <see cref="FastStaticFileOptions.OnPrepareResponse"/> is given about the response being prepared.</summary>
public sealed class FastFileResponseContext
{
    private readonly IFileInfo? _file;
    private IFileInfo? _lazyFile;

    internal FastFileResponseContext(HttpContext context, string? physicalPath, IFileInfo? file, string? contentEncoding)
    {
        Context = context;
        PhysicalPath = physicalPath;
        _file = file;
        ContentEncoding = contentEncoding;
    }

    /// <summary>The request being answered.</summary>
    public HttpContext Context { get; }

    /// <summary>The path on disk of the file being sent (a precompressed sidecar when one was chosen), or <see langword="null"/> for non-physical providers.</summary>
    public string? PhysicalPath { get; }

    /// <summary>The content coding of the representation being sent (<c>br</c>, <c>zstd</c>, <c>gzip</c>), or <see langword="null"/>.</summary>
    public string? ContentEncoding { get; }

    /// <summary>The file being sent, as an <see cref="IFileInfo"/> (created on first use for physical files).</summary>
    public IFileInfo File => _file ?? (_lazyFile ??= new PhysicalFileInfo(new FileInfo(PhysicalPath!)));
}
