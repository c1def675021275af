using Microsoft.Extensions.Logging;

namespace FastFiles.Diagnostics;

// Startup diagnostics: a FastFiles part that cannot apply where the app asked for it says so once, by name.
internal static partial class Log
{
    [LoggerMessage(6001, LogLevel.Warning,
        "UseFastFiles does not serve the {Count} endpoint(s) mapped by MapStaticAssets (for example '{Route}'): a request that matched an endpoint is left to it. Add .WithFastFiles() to MapStaticAssets() to send those files through FastFiles.",
        EventName = "StaticAssetsNotAccelerated")]
    public static partial void StaticAssetsNotAccelerated(ILogger logger, int count, string route);

    [LoggerMessage(6002, LogLevel.Warning,
        "FastFiles' TLS-side connection parts ({Parts}) do not apply to the HTTPS endpoint {Endpoint}: {Reason}",
        EventName = "TlsPartsNotApplied")]
    public static partial void TlsPartsNotApplied(ILogger logger, string parts, string endpoint, string reason);

    [LoggerMessage(6003, LogLevel.Information,
        "FastFiles applied TLS and its connection parts ({Parts}) to {Endpoint}, bound from a URL.",
        EventName = "UrlEndpointConnections")]
    public static partial void UrlEndpointConnections(ILogger logger, string parts, string endpoint);

    [LoggerMessage(6004, LogLevel.Warning,
        "FastFiles could not read Kestrel's endpoint defaults (KestrelServerOptions.EndpointDefaults is not in this Kestrel): its ConfigureEndpointDefaults callback for URL-bound endpoints replaces one the app set before UseFastFilesConnections(), and one set after replaces FastFiles'.",
        EventName = "EndpointDefaultsNotComposed")]
    public static partial void EndpointDefaultsNotComposed(ILogger logger);

    [LoggerMessage(6006, LogLevel.Warning,
        "FastFiles' plaintext connection parts ({Parts}) do not apply to the endpoint {Endpoint}: endpoints bound from URLs (--urls, ASPNETCORE_URLS, launchSettings.json) get them only when the app calls builder.Services.AddFastFiles(), and code endpoints call listenOptions.UseZeroCopySendFile() / UseStaticLane() themselves. Add AddFastFiles(), or declare the endpoint under Kestrel:Endpoints.",
        EventName = "PlaintextPartsNotApplied")]
    public static partial void PlaintextPartsNotApplied(ILogger logger, string parts, string endpoint);

    [LoggerMessage(6005, LogLevel.Warning,
        "The static asset '{AssetPath}' (route '{Route}') no longer has the bytes its build manifest describes (length and SHA-256 ETag): it was changed after the build. FastFiles does not answer it from memory; MapStaticAssets serves the file as it is now, under the build's headers. Rebuild or republish to update assets.",
        EventName = "StaticAssetChanged")]
    public static partial void StaticAssetChanged(ILogger logger, string route, string assetPath);
}
