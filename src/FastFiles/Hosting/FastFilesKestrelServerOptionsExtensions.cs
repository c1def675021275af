using FastFiles.Connections;
using FastFiles.Hosting;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;

namespace Microsoft.AspNetCore.Hosting;

/// <summary>Adds FastFiles' connection-level parts to Kestrel.</summary>
public static class FastFilesKestrelServerOptionsExtensions
{
    /// <summary>
    /// Applies FastFiles' connection-level parts to Kestrel. TLS record coalescing (on by default) and the HTTP/2 TLS
    /// output stage (off by default) are put on the plaintext side of TLS of every HTTPS endpoint read from
    /// configuration (<c>Kestrel:Endpoints</c>): for each such endpoint FastFiles registers a
    /// <c>ConfigurationLoader.Endpoint(name, ...)</c> callback that calls <c>UseHttps</c> with the HTTPS options the loader
    /// assembled (certificate included) and then adds them; the loader sees the endpoint is already TLS and does not add
    /// TLS again. Code-configured endpoints get the stage with
    /// <c>listenOptions.UseHttps(...).UseHttp2TlsOutputStage()</c>, which then uses the options given here.
    /// </summary>
    /// <remarks>
    /// Endpoints bound from URLs (<c>--urls</c>, <c>ASPNETCORE_URLS</c>, <c>launchSettings.json</c>, <c>app.Urls</c>) get the
    /// parts too when the app calls <c>AddFastFiles()</c>: a <c>ConfigureEndpointDefaults</c> callback adds TLS to an HTTPS
    /// one first, as Kestrel would, then the parts; an app's own <c>ConfigureEndpointDefaults</c> callback, set before or after
    /// this call, still runs (first). Options are bound
    /// from the <c>FastFiles:Kestrel</c> configuration section before <paramref name="configure"/> runs. Every HTTPS
    /// endpoint the TLS-side parts do not reach is named in a startup warning.
    /// Kestrel keeps one callback per configured endpoint name, so an app that registers its own
    /// <c>ConfigurationLoader.Endpoint(name, ...)</c> after this call replaces FastFiles' callback for that name (and one
    /// registered before this call is replaced by FastFiles'); such a callback should end with
    /// <c>.UseHttp2TlsOutputStage()</c>. Calling
    /// <c>KestrelServerOptions.Configure(...)</c> after this call creates a new loader without FastFiles' callbacks.
    /// Endpoints configured with SNI keep Kestrel's own TLS (its SNI selection is internal) and, with <c>AddFastFiles()</c>,
    /// get the TLS-side parts behind it (without it they are named in the startup warning), and endpoints that appear in configuration
    /// only after this call (configuration reload) are not staged.
    /// </remarks>
    /// <param name="options">Kestrel's options.</param>
    /// <param name="configure">Configures FastFiles' Kestrel options; by default the stage runs in <see cref="Http2TlsOutputStageMode.Http2Only"/> mode.</param>
    /// <returns>Kestrel's options.</returns>
    public static KestrelServerOptions UseFastFilesConnections(this KestrelServerOptions options, Action<FastFilesKestrelOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        var fastFiles = new FastFilesKestrelOptions();
        // Configuration first, then code, as for FastFiles' other options.
        if (options.ApplicationServices?.GetService<IConfiguration>() is { } configuration)
        {
            FastFilesConfiguration.Bind(configuration.GetSection(FastFilesConfiguration.KestrelSectionName), fastFiles);
        }
        configure?.Invoke(fastFiles);
        Validate(fastFiles);
        if (FastFilesKestrelState.Of(options.ApplicationServices) is { } state)
        {
            state.Options = fastFiles;
        }

        Http2TlsOutputStageOptions stage = fastFiles.Http2TlsOutputStage;
        bool stageOn = fastFiles.EnableHttp2TlsOutputStage && stage.Mode != Http2TlsOutputStageMode.Disabled;
        // The parts that go behind TLS on an HTTPS endpoint, the lane among them: named in the startup logs, and an HTTPS
        // endpoint they miss is warned about even when the lane is the only one asked for.
        string parts = string.Join(", ", new[]
        {
            fastFiles.EnableTlsRecordCoalescing ? "TLS record coalescing" : null,
            stageOn ? "HTTP/2 TLS output stage" : null,
            fastFiles.EnableStaticLane ? "static lane" : null,
        }.OfType<string>());
        if (options.ApplicationServices is not null)
        {
            ConnectionPartsCoverage.Register(
                options,
                parts,
                // The options of the last call, as for configuration and code endpoints (read when each endpoint is built).
                listen => DescriptorReserveConnectionMiddleware.Use(listen, Latest(listen, fastFiles).DescriptorReserve),
                (listen, https) => EndpointWiring.ApplyToUrlEndpoint(listen, https, Latest(listen, fastFiles)));
        }

        if (options.ConfigurationLoader is { } loader)
        {
            EndpointWiring.ApplyToConfigurationEndpoints(loader, fastFiles);
        }

        return options;
    }

    private static FastFilesKestrelOptions Latest(ListenOptions listen, FastFilesKestrelOptions thisCall)
        => FastFilesKestrelState.Of(listen.ApplicationServices)?.Options ?? thisCall;

    // As FastFilesOptionsValidator does for FastFilesOptions: a negative size, count or interval stops the host at start,
    // naming the option.
    private static void Validate(FastFilesKestrelOptions o)
    {
        const string section = FastFilesConfiguration.KestrelSectionName;
        var failures = new List<string>();
        void NotNegative(long value, string option)
        {
            if (value < 0)
            {
                failures.Add($"{section}:{option} must not be negative (it is {value}).");
            }
        }

        NotNegative(o.DescriptorReserve, nameof(o.DescriptorReserve));
        o.ZeroCopySendFile.Validate(failures, $"{section}:ZeroCopySendFile");

        if (o.Http2TlsOutputStage.MaxBufferSize is < 1 and long bound)
        {
            failures.Add($"{section}:Http2TlsOutputStage:{nameof(o.Http2TlsOutputStage.MaxBufferSize)} must be at least 1 (it is {bound}).");
        }

        if (failures.Count > 0)
        {
            throw new Microsoft.Extensions.Options.OptionsValidationException(Microsoft.Extensions.Options.Options.DefaultName, typeof(FastFilesKestrelOptions), failures);
        }
    }
}
