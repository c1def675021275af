using System.Runtime.CompilerServices;
using FastFiles.Diagnostics;
using Microsoft.AspNetCore.Hosting;
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

    /// <summary>The endpoint was asked for the parts, and the reason they do not apply (<see langword="null"/>: already logged).</summary>
    public static void NotCovered(ListenOptions listen, string? reason)
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
    /// Gives endpoints bound from URLs FastFiles' parts through <paramref name="applyParts"/> (with <see langword="true"/>
    /// for HTTPS, after TLS has been added), and registers the startup check that names the HTTPS endpoints left
    /// without them. Once per server.
    /// </summary>
    public static void Register(KestrelServerOptions options, string parts, Action<ListenOptions, bool> applyParts)
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
        (HashSet<int> httpPorts, HashSet<int> httpsPorts) = UrlPorts(services.GetService<IConfiguration>());
        if (httpPorts.Count + httpsPorts.Count > 0)
        {
            options.ConfigureEndpointDefaults(listen =>
            {
                if (!state.Configured
                    || listen.IPEndPoint is not { } endpoint
                    || options.ConfigurationLoader?.Configuration.GetSection("Endpoints").GetChildren().Any() == true)
                {
                    // A code endpoint (its own UseHttps may follow), or an endpoint from Kestrel:Endpoints (FastFiles'
                    // loader callback applies the parts there).
                    return;
                }

                if (httpsPorts.Contains(endpoint.Port))
                {
                    listen.UseHttps();
                    applyParts(listen, true);
                    Covered(listen);
                    Log.UrlEndpointConnections(CreateLogger(services), parts, NameOf(listen));
                }
                else if (httpPorts.Contains(endpoint.Port))
                {
                    applyParts(listen, false);
                }
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

        if (state.Parts.Length == 0)
        {
            return;
        }

        string[] covered;
        (string Endpoint, string? Reason)[] reasons;
        lock (state)
        {
            covered = state.Covered.Select(NameOf).ToArray();
            reasons = state.Reasons.Select(r => (NameOf(r.Listen), r.Reason)).ToArray();
        }

        ILogger logger = CreateLogger(services);
        foreach (string address in addresses.Where(a => a.StartsWith("https://", StringComparison.OrdinalIgnoreCase)))
        {
            if (covered.Contains(address, StringComparer.OrdinalIgnoreCase))
            {
                continue;
            }

            (string Endpoint, string? Reason) known = reasons.FirstOrDefault(r => string.Equals(r.Endpoint, address, StringComparison.OrdinalIgnoreCase));
            if (known.Endpoint is not null && known.Reason is null)
            {
                continue;
            }

            string reason = known.Reason
                ?? (state.Configured
                    ? "it was bound in a way FastFiles cannot reach (a URL added in code with app.Urls or app.Run(url), or a code endpoint without .UseFastFilesConnections() after UseHttps()). Declare it under Kestrel:Endpoints, in --urls/ASPNETCORE_URLS, or as listenOptions.UseHttps(...).UseFastFilesConnections()."
                    : "endpoints bound from URLs (--urls, ASPNETCORE_URLS, launchSettings.json) get the parts only when the app calls builder.Services.AddFastFiles(). Add it, or declare the endpoint under Kestrel:Endpoints.");
            Log.TlsPartsNotApplied(logger, state.Parts, address, reason);
        }
    }

    // The ports of the URLs Kestrel binds when no endpoint is configured otherwise: "urls" (--urls, ASPNETCORE_URLS,
    // launchSettings.json), "http_ports" and "https_ports" (ASPNETCORE_HTTP_PORTS, ASPNETCORE_HTTPS_PORTS).
    private static (HashSet<int> Http, HashSet<int> Https) UrlPorts(IConfiguration? configuration)
    {
        var http = new HashSet<int>();
        var https = new HashSet<int>();
        if (configuration is null)
        {
            return (http, https);
        }

        foreach (string url in Split(configuration["urls"]))
        {
            try
            {
                BindingAddress address = BindingAddress.Parse(url);
                (string.Equals(address.Scheme, "https", StringComparison.OrdinalIgnoreCase) ? https : http).Add(address.Port);
            }
            catch (FormatException)
            {
                // Kestrel reports a malformed URL itself when it binds.
            }
        }

        foreach ((string key, HashSet<int> ports) in new[] { ("http_ports", http), ("https_ports", https) })
        {
            foreach (string port in Split(configuration[key]))
            {
                if (int.TryParse(port, System.Globalization.CultureInfo.InvariantCulture, out int value))
                {
                    ports.Add(value);
                }
            }
        }

        return (http, https);
    }

    private static string[] Split(string? list) => (list ?? string.Empty).Split(';', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);

    /// <summary>The endpoint as Kestrel names it in its addresses (<c>https://127.0.0.1:5443</c>).</summary>
    public static string NameOf(ListenOptions listen) => listen.ToString() ?? string.Empty;

    private static State StateOf(KestrelServerOptions options) => States.GetValue(options, static _ => new State());

    private static ILogger CreateLogger(IServiceProvider services)
        => services.GetService<ILoggerFactory>()?.CreateLogger(LoggerCategory) ?? NullLogger.Instance;

    private sealed class State
    {
        public volatile bool Configured;

        public bool Registered;

        public string Parts = string.Empty;

        public List<ListenOptions> Covered { get; } = [];

        public List<(ListenOptions Listen, string? Reason)> Reasons { get; } = [];
    }
}
