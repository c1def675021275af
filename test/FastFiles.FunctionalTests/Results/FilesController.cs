using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Mvc;

namespace FastFiles.FunctionalTests.Results;

/// <summary>The folder the test controller serves from, registered per host.</summary>
public sealed record ControllerFileRoot(string Path);

/// <summary>MVC actions returning stock and FastFiles file results, for hosts that call MapControllers.</summary>
[Route("mvc")]
public sealed class FilesController(ControllerFileRoot root) : ControllerBase
{
    [HttpGet("physical/{name}")]
    public IActionResult Physical(string name) => PhysicalFile(System.IO.Path.Combine(root.Path, name), "application/octet-stream", enableRangeProcessing: true);

    [HttpGet("fast/{name}")]
    [HttpHead("fast/{name}")]
    public IActionResult Fast(string name, string? download = null)
        => FastResults.PhysicalFile(System.IO.Path.Combine(root.Path, name), fileDownloadName: download);
}
