using System.IO.Pipelines;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>
/// A pass-through <see cref="IHttpResponseBodyFeature"/> that, when <c>SendFileAsync</c> is called, names the
/// feature it forwards to in a response header. Installed below UseFastSendFile it shows which implementation
/// UseStaticFiles / Results.File / PhysicalFileResult really reached.
/// </summary>
public sealed class BodyFeatureProbe(HttpContext context, IHttpResponseBodyFeature inner, string header, Action<string>? onSendFile) : IHttpResponseBodyFeature
{
    public const string InnerHeader = "X-SendFile-Inner";
    public const string CustomHeader = "X-Custom-SendFile";

    public IHttpResponseBodyFeature Inner => inner;

    public Stream Stream => inner.Stream;

    public PipeWriter Writer => inner.Writer;

    public void DisableBuffering() => inner.DisableBuffering();

    public Task StartAsync(CancellationToken cancellationToken = default) => inner.StartAsync(cancellationToken);

    public Task CompleteAsync() => inner.CompleteAsync();

    public Task SendFileAsync(string path, long offset, long? count, CancellationToken cancellationToken = default)
    {
        onSendFile?.Invoke(inner.GetType().Name);
        if (!context.Response.HasStarted)
        {
            context.Response.Headers.Append(header, inner.GetType().Name);
        }

        return inner.SendFileAsync(path, offset, count, cancellationToken);
    }

    /// <summary>Wraps the current body feature for the rest of the pipeline, restoring it afterwards.</summary>
    public static void Install(IApplicationBuilder app, string header = InnerHeader, Action<string>? onSendFile = null) => app.Use(async (context, next) =>
    {
        IHttpResponseBodyFeature current = context.Features.GetRequiredFeature<IHttpResponseBodyFeature>();
        context.Features.Set<IHttpResponseBodyFeature>(new BodyFeatureProbe(context, current, header, onSendFile));
        try
        {
            await next(context);
        }
        finally
        {
            context.Features.Set(current);
        }
    });
}
