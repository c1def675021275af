using FastFiles.Diagnostics;
using FastFiles.IO;
using Microsoft.AspNetCore.Builder;
using System.Runtime.CompilerServices;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;

namespace FastFiles.SendFile;

/// <summary>
/// Installs <see cref="FastSendFileFeature"/> for everything after it in the pipeline, then restores Kestrel's
/// own feature (the same shape as ResponseCompression's body wrapping).
/// </summary>
internal sealed class FastSendFileMiddleware
{
    private readonly RequestDelegate _next;
    private readonly FastFilesOptions _options;
    private readonly ILogger _logger;

    // Keyed by Kestrel's protocol object, which lives as long as its connection (or pooled HTTP/2 stream):
    // entries go away with it.
    private readonly ConditionalWeakTable<IHttpResponseBodyFeature, FastSendFileFeature> _features = new();
    private readonly ConditionalWeakTable<IHttpResponseBodyFeature, FastSendFileFeature>.CreateValueCallback _create;

    public FastSendFileMiddleware(RequestDelegate next, IOptions<FastFilesOptions> options, ILoggerFactory loggerFactory, IServiceProvider services)
    {
        _next = next;
        _options = options.Value;
        _logger = loggerFactory.CreateLogger("FastFiles.SendFile");
        // Resolve, not For: the endpoint convention builds this middleware from a request's services.
        FastFilesMetrics metrics = FastFilesMetrics.Resolve(services);
        _create = inner => new FastSendFileFeature(inner, _options, _logger, metrics);
    }

    public Task Invoke(HttpContext context)
    {
        IHttpResponseBodyFeature? inner = context.Features.Get<IHttpResponseBodyFeature>();
        if (inner is null || !KestrelFeatures.IsKestrelResponseBody(inner))
        {
            // Someone above replaced the body (compression, caching, another server): their SendFileAsync wins.
            return _next(context);
        }

        FastSendFileFeature feature = _features.GetValue(inner, _create);
        context.Features.Set<IHttpResponseBodyFeature>(feature);
        Task task;
        try
        {
            task = _next(context);
        }
        catch
        {
            context.Features.Set(inner);
            throw;
        }

        if (task.IsCompletedSuccessfully)
        {
            context.Features.Set(inner);
            return task;
        }

        return AwaitAndRestore(task, context, inner);
    }

    private static async Task AwaitAndRestore(Task task, HttpContext context, IHttpResponseBodyFeature inner)
    {
        try
        {
            await task;
        }
        finally
        {
            context.Features.Set(inner);
        }
    }
}
