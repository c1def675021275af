using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>Stock <c>UseStaticFiles</c> on top of FastFiles' <c>SendFileAsync</c> (<c>UseFastSendFile</c>), under one path.</summary>
public static class StockOnFast
{
    public const string Prefix = "/stock-on-fast";

    /// <summary>Serves every file under <paramref name="root"/> at <see cref="Prefix"/>.</summary>
    public static void Map(IApplicationBuilder app, string root) => app.Map(Prefix, branch =>
    {
        branch.UseFastSendFile();
        branch.UseStaticFiles(new StaticFileOptions { FileProvider = new PhysicalFileProvider(root), ServeUnknownFileTypes = true });
    });
}
