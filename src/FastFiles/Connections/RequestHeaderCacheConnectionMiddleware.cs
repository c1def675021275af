using FastFiles.Http;
using Microsoft.AspNetCore.Connections;

namespace FastFiles.Connections;

/// <summary>
/// Gives each connection a <see cref="RequestHeaderCache"/>. HTTP-level feature lookups fall back to the
/// connection's features, so the static-file middleware finds it with <c>context.Features.Get</c> on
/// HTTP/1.1 and HTTP/2 alike.
/// </summary>
internal sealed class RequestHeaderCacheConnectionMiddleware(ConnectionDelegate next)
{
    public Task OnConnectionAsync(ConnectionContext context)
    {
        context.Features.Set(new RequestHeaderCache());
        return next(context);
    }
}
