using System.Runtime.CompilerServices;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace FastFiles.Hosting;

/// <summary>
/// Which HTTPS endpoints got FastFiles' TLS-side connection parts, the parts for endpoints bound from URLs, and one
/// startup warning per HTTPS endpoint the parts were asked for but do not reach.
/// </summary>
/// <remarks>
/// Kestrel binds a URL endpoint (<c>--urls</c>, <c>ASPNETCORE_URLS</c>, <c>https_ports</c>, <c>applicationUrl</c> in
/// launchSettings.json) by running <c>ConfigureEndpointDefaults</c> and then adding TLS itself, unless the endpoint
/// already has TLS (aspnetcore's AddressBinder, <c>AddressesStrategy</c>); connection middleware added in the
/// defaults callback would see ciphertext. So for an endpoint whose port an HTTPS URL in configuration names, the
/// callback adds TLS first, exactly as Kestrel would (<c>UseHttps()</c>: the HTTPS defaults and the default
/// certificate), and the parts after it. Code endpoints also run that callback, while Kestrel is being configured,
/// before their own <c>UseHttps</c>; the callback therefore acts only once <c>AddFastFiles</c>' post-configuration
/// has marked Kestrel's options complete.
/// </remarks>
internal static class ConnectionPartsCoverage
{
    private const string LoggerCategory = "FastFiles.Hosting";

    private static readonly ConditionalWeakTable<KestrelServerOptions, State> States = [];

    /// <summary>Called after every <c>ConfigureKestrel</c> callback (by <c>AddFastFiles</c>).</summary>
    public static void MarkConfigured(KestrelServerOptions options) => StateOf(options).Configured = true;

    /// <summary>The endpoint has the parts on the plaintext side of its TLS.</summary>
    public static void Covered(ListenOptions listen)
    {
        if (listen.KestrelServerOptions is { } server)
        {
            State state = StateOf(server);
            lock (state)
            {
                state.Covered.Add(listen);
            }
        }
    }

    /// <summary>The endpoint was asked for the parts, and the reason they do not apply.</summary>
    public static void NotCovered(ListenOptions listen, string reason)
    {
        if (listen.KestrelServerOptions is { } server)
        {
            State state = StateOf(server);
            lock (state)
            {
                state.Reasons.Add((listen, reason));
            }
        }
    }

    /// <summary>
    /// Gives HTTPS endpoints bound from URLs the parts (through <paramref name="applyParts"/>, after TLS), and registers
    /// the startup check that names the HTTPS endpoints left without them. Once per server.
    /// </summary>
    public static void Register(KestrelServerOptions options, string parts, Action<ListenOptions> applyParts)
    {
        State state = StateOf(options);
        lock (state)
        {
            if (state.Registered)
            {
                return;
            }

            state.Registered = true;
            state.Parts = parts;
        }

        IServiceProvider services = options.ApplicationServices;
        HashSet<int> httpsPorts = HttpsUrlPorts(services.GetService<IConfiguration>());
        if (httpsPorts.Count > 0)
        {
            options.ConfigureEndpointDefaults(listen =>
            {
                if (!state.Configured
                    || listen.IPEndPoint is not { } endpoint
                    || !httpsPorts.Contains(endpoint.Port)
                    || options.ConfigurationLoader?.Configuration.GetSection("Endpoints").GetChildren().Any() == true)
                {
                    // A code endpoint (its own UseHttps follows), an endpoint from Kestrel:Endpoints (FastFiles' loader
                    // callback applies the parts), or a plaintext URL.
                    return;
                }

                listen.UseHttps();
                applyParts(listen);
                Covered(listen);
                Log.UrlEndpointConnections(CreateLogger(services), parts, listen.ToString());
            });
        }

        services.GetService<IHostApplicationLifetime>()?.ApplicationStarted.Register(() => Check(services, state));
    }

    // After the server has bound: every HTTPS address Kestrel listens on either got the parts or is named here.
    private static void Check(IServiceProvider services, State state)
    {
        ICollection<string>? addresses = services.GetService<IServer>()?.Features.Get<IServerAddressesFeature>()?.Addresses;
        if (addresses is null)
        {
            return;
        }

        string[] covered;
        (string Endpoint, string Reason)[] reasons;
        lock (state)
        {
            covered = state.Covered.Select(l => l.ToString()).ToArray();
            reasons = state.Reasons.Select(r => (r.Listen.ToString(), r.Reason)).ToArray();
        }

        ILogger logger = CreateLogger(services);
        foreach (string address in addresses.Where(a => a.StartsWith("https://", StringComparison.OrdinalIgnoreCase)))
        {
            if (covered.Contains(address, StringComparer.OrdinalIgnoreCase))
            {
                continue;
            }

            string reason = reasons.FirstOrDefault(r => string.Equals(r.Endpoint, address, StringComparison.OrdinalIgnoreCase)).Reason
                ?? (state.Configured
                    ? "it was bound in a way FastFiles cannot reach (a URL added in code with app.Urls or app.Run(url), or a code endpoint without .UseFastFilesConnections() after UseHttps()). Declare it under Kestrel:Endpoints, in --urls/ASPNETCORE_URLS, or as listenOptions.UseHttps(...).UseFastFilesConnections()."
                    : "endpoints bound from URLs (--urls, ASPNETCORE_URLS, launchSettings.json) get the parts only when the app calls builder.Services.AddFastFiles(). Add it, or declare the endpoint under Kestrel:Endpoints.");
            Log.TlsPartsNotApplied(logger, state.Parts, address, reason);
        }
    }

    // The HTTPS ports of the URLs Kestrel will bind when no endpoint is configured otherwise: "urls" (--urls,
    // ASPNETCORE_URLS, launchSettings.json) and "https_ports" (ASPNETCORE_HTTPS_PORTS).
    private static HashSet<int> HttpsUrlPorts(IConfiguration? configuration)
    {
        var ports = new HashSet<int>();
        if (configuration is null)
        {
            return ports;
        }

        foreach (string url in (configuration["urls"] ?? string.Empty).Split(';', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries))
        {
            try
            {
                BindingAddress address = BindingAddress.Parse(url);
                if (string.Equals(address.Scheme, "https", StringComparison.OrdinalIgnoreCase))
                {
                    ports.Add(address.Port);
                }
            }
            catch (FormatException)
            {
                // Kestrel reports a malformed URL itself when it binds.
            }
        }

        foreach (string port in (configuration["https_ports"] ?? string.Empty).Split(';', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries))
        {
            if (int.TryParse(port, System.Globalization.CultureInfo.InvariantCulture, out int value))
            {
                ports.Add(value);
            }
        }

        return ports;
    }

    private static State StateOf(KestrelServerOptions options) => States.GetValue(options, static _ => new State());

    private static ILogger CreateLogger(IServiceProvider services)
        => services.GetService<ILoggerFactory>()?.CreateLogger(LoggerCategory) ?? NullLogger.Instance;

    private sealed class State
    {
        public volatile bool Configured;

        public bool Registered;

        public string Parts = string.Empty;

        public List<ListenOptions> Covered { get; } = [];

        public List<(ListenOptions Listen, string Reason)> Reasons { get; } = [];
    }
}
