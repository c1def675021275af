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
using Microsoft.Extensions.Options;

namespace FastFiles.Hosting;

/// <summary>
/// Which HTTPS endpoints got FastFiles' TLS-side connection parts, the parts for endpoints bound from URLs, and one
/// startup warning per HTTPS endpoint the parts were asked for but do not reach.
/// </summary>
/// <remarks>
/// Kestrel binds a URL endpoint (<c>--urls</c>, <c>ASPNETCORE_URLS</c>, <c>https_ports</c>, <c>applicationUrl</c> in
/// launchSettings.json) by running <c>ConfigureEndpointDefaults</c> and then adding TLS itself, unless the endpoint
/// already has TLS (aspnetcore's AddressBinder, <c>AddressesStrategy</c>); connection middleware added in the
/// defaults callback would see ciphertext. So for an endpoint that an HTTPS address names, the callback adds TLS
/// first, exactly as Kestrel would (<c>UseHttps()</c>: the HTTPS defaults and the default certificate), and the parts
/// after it. The addresses are the ones the host handed Kestrel, taken by <c>AddFastFiles</c>' startup filter; code
/// endpoints run the same callback earlier, while Kestrel is configured and no address is known yet, and are left to
/// their own <c>UseHttps</c>.
/// </remarks>
internal static class ConnectionPartsCoverage
{
    private const string LoggerCategory = "FastFiles.Hosting";

    /// <summary>
    /// The addresses Kestrel is about to bind, in order (<c>AddFastFiles</c>' startup filter takes them while the
    /// pipeline is built, after the host has put the configured URLs, <c>app.Urls</c> or <c>app.Run(url)</c> there
    /// and before Kestrel starts binding and clears them).
    /// </summary>
    public static void SetAddresses(KestrelServerOptions options, string[] addresses)
    {
        var parsed = new List<(bool Https, int Port, string? UnixPath)>();
        foreach (string address in addresses)
        {
            try
            {
                BindingAddress binding = BindingAddress.Parse(address);
                parsed.Add((string.Equals(binding.Scheme, "https", StringComparison.OrdinalIgnoreCase), binding.Port, binding.IsUnixPipe ? binding.UnixPipePath : null));
            }
            catch (FormatException)
            {
                // Kestrel reports a malformed URL itself when it binds.
            }
        }

        State state = StateOf(options);
        lock (state)
        {
            state.Addresses = parsed;
        }
    }

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

    /// <summary>The endpoint got the static lane or the zero-copy send path (whichever <paramref name="part"/> names).</summary>
    public static void PlaintextCovered(ListenOptions listen, PlaintextParts part)
    {
        if (listen.KestrelServerOptions is { } server)
        {
            State state = StateOf(server);
            lock (state)
            {
                state.PlaintextCovered.Add((listen, part));
            }
        }
    }

    /// <summary>
    /// An HTTPS endpoint from configuration that Kestrel must put TLS on itself (SNI: its per-host selection is
    /// internal): <paramref name="applyParts"/> runs after Kestrel's TLS once the loader has run, which
    /// <see cref="CompleteConfigurationEndpoints"/> makes happen before binding. Needs <c>AddFastFiles()</c>, whose
    /// startup filter calls it; without it the endpoint is named in the startup warning.
    /// </summary>
    public static void AfterKestrelTls(ListenOptions listen, string name, Action<ListenOptions> applyParts)
    {
        if (listen.ApplicationServices is not { } services || !FastFilesConfiguration.IsRegistered(services))
        {
            NotCovered(listen, $"it uses SNI (Kestrel:Endpoints:{name}:Sni), where FastFiles adds its parts after Kestrel's own TLS only when the app calls builder.Services.AddFastFiles().");
            return;
        }

        if (listen.KestrelServerOptions is { } server)
        {
            State state = StateOf(server);
            lock (state)
            {
                state.AfterTls.Add((listen, name, applyParts));
            }
        }
    }

    /// <summary>
    /// From the startup filter, after every <c>ConfigureKestrel</c> callback and before binding: when FastFiles'
    /// parts wait for Kestrel's TLS on SNI endpoints, runs the configuration loader now (Kestrel runs it once, and
    /// skips it when it has run) so those endpoints exist with their TLS, then adds the parts behind it.
    /// </summary>
    public static void CompleteConfigurationEndpoints(KestrelServerOptions options)
    {
        State state = StateOf(options);
        if (options.ConfigurationLoader is not { } loader
            || !state.Registered
            || !loader.Configuration.GetSection("Endpoints").GetChildren().Any(e => e.GetSection("Sni").GetChildren().Any()))
        {
            return;
        }

        loader.Load();
        (ListenOptions Listen, string Name, Action<ListenOptions> Apply)[] waiting;
        lock (state)
        {
            waiting = [.. state.AfterTls];
            state.AfterTls.Clear();
        }

        foreach ((ListenOptions listen, string name, Action<ListenOptions> apply) in waiting)
        {
            if (IsTls(listen))
            {
                apply(listen);
                Covered(listen);
            }
            else
            {
                NotCovered(listen, $"it uses SNI (Kestrel:Endpoints:{name}:Sni), and Kestrel did not put TLS on it when its configuration was loaded.");
            }
        }
    }

    /// <summary>
    /// Gives endpoints bound from URLs FastFiles' parts: <paramref name="outermost"/> first, in front of the TLS added
    /// for an HTTPS address, then <paramref name="applyParts"/> (with <see langword="true"/> for HTTPS, after TLS), and registers the startup check that names the HTTPS endpoints left
    /// without them. Once per server.
    /// </summary>
    public static void Register(KestrelServerOptions options, string parts, Action<ListenOptions> outermost, Action<ListenOptions, bool> applyParts)
    {
        State state = StateOf(options);
        lock (state)
        {
            if (state.Registered)
            {
                // A later call's options replace the earlier ones (the callbacks read them from FastFilesKestrelState).
                state.Parts = parts;
                return;
            }

            state.Registered = true;
            state.Parts = parts;
        }

        IServiceProvider services = options.ApplicationServices;
        services.GetService<IHostApplicationLifetime>()?.ApplicationStarted.Register(() => Check(services, state));
        if (!FastFilesConfiguration.IsRegistered(services))
        {
            // No startup filter, so no addresses: leave Kestrel's single endpoint-defaults slot to the app.
            return;
        }

        state.Options = options;
        state.Defaults = listen =>
        {
            // Code endpoints run this callback while Kestrel is configured, before the addresses are known (their own
            // UseHttps may follow); endpoints from Kestrel:Endpoints get the parts from FastFiles' loader callback.
            // A Unix domain socket (http://unix:/run/app.sock) is matched by its path, an IP endpoint by its port.
            if ((listen.IPEndPoint is null && listen.SocketPath is null)
                || options.ConfigurationLoader?.Configuration.GetSection("Endpoints").GetChildren().Any() == true
                || TakeAddress(state, listen.IPEndPoint?.Port ?? 0, listen.SocketPath) is not { } https)
            {
                return;
            }

            // In front of the TLS added here: a connection that never starts its handshake would otherwise hold its
            // descriptor for the whole handshake timeout before the reserve could see it.
            outermost(listen);
            if (https)
            {
                // An app's own endpoint-defaults callback ran first and may have added TLS already.
                if (!IsTls(listen))
                {
                    listen.UseHttps();
                }

                applyParts(listen, true);
                Covered(listen);
                Log.UrlEndpointConnections(CreateLogger(services), state.Parts, NameOf(listen));
            }
            else
            {
                applyParts(listen, false);
            }
        };
        InstallDefaults(state, CreateLogger(services));
    }

    /// <summary>
    /// Called once the app has configured Kestrel (while the pipeline is built, before binding): an app callback given
    /// to <c>ConfigureEndpointDefaults</c> after FastFiles' replaced FastFiles' callback; both run again from here.
    /// </summary>
    public static void EnsureEndpointDefaults(KestrelServerOptions options, IServiceProvider services)
    {
        State state = StateOf(options);
        if (state.Defaults is not null)
        {
            InstallDefaults(state, CreateLogger(services));
        }
    }

    // Kestrel keeps one endpoint-defaults callback: ConfigureEndpointDefaults replaces it and the getter is internal
    // (KestrelServerOptions.EndpointDefaults in .NET 10). Reading it lets both the app's callback and FastFiles' run,
    // the app's first (as if FastFiles' were its last line), whichever was registered first.
    private static void InstallDefaults(State state, ILogger logger)
    {
        KestrelServerOptions options = state.Options!;
        Action<ListenOptions> current;
        try
        {
            current = EndpointDefaults(options);
        }
        catch (MissingMemberException)
        {
            // A Kestrel without the property: take the slot as before, and say what that costs once.
            if (state.Installed is null)
            {
                Log.EndpointDefaultsNotComposed(logger);
                state.Installed = state.Defaults;
                options.ConfigureEndpointDefaults(state.Defaults!);
            }

            return;
        }

        if (ReferenceEquals(current, state.Installed))
        {
            return;
        }

        Action<ListenOptions> fastFiles = state.Defaults!;
        Action<ListenOptions> composed = listen =>
        {
            current(listen);
            fastFiles(listen);
        };
        state.Installed = composed;
        options.ConfigureEndpointDefaults(composed);
    }

    [UnsafeAccessor(UnsafeAccessorKind.Method, Name = "get_EndpointDefaults")]
    private static extern Action<ListenOptions> EndpointDefaults(KestrelServerOptions options);

    // After the server has bound: every HTTPS address Kestrel listens on either got the parts or is named here.
    private static void Check(IServiceProvider services, State state)
    {
        ICollection<string>? addresses = services.GetService<IServer>()?.Features.Get<IServerAddressesFeature>()?.Addresses;
        if (addresses is null)
        {
            return;
        }

        if (!FastFilesConfiguration.IsRegistered(services))
        {
            CheckPlaintext(services, state, addresses);
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
                ?? (state.AddressesSeen
                    ? "it was bound in a way FastFiles cannot reach (a URL added in code with app.Urls or app.Run(url), or a code endpoint without .UseFastFilesConnections() after UseHttps()). Declare it under Kestrel:Endpoints, in --urls/ASPNETCORE_URLS, or as listenOptions.UseHttps(...).UseFastFilesConnections()."
                    : "endpoints bound from URLs (--urls, ASPNETCORE_URLS, launchSettings.json) get the parts only when the app calls builder.Services.AddFastFiles(). Add it, or declare the endpoint under Kestrel:Endpoints.");
            Log.TlsPartsNotApplied(logger, state.Parts, address, reason);
        }
    }

    // Without AddFastFiles' startup filter no URL-bound endpoint gets the opt-in plaintext parts (the lane, the send path),
    // and nothing else would say so: every plaintext address without a part the server-level call asked for is named.
    private static void CheckPlaintext(IServiceProvider services, State state, ICollection<string> addresses)
    {
        if (FastFilesKestrelState.Of(services)?.Options is not { } options)
        {
            return;
        }

        PlaintextParts asked = (options.EnableStaticLane ? PlaintextParts.Lane : 0) | (options.EnableZeroCopySendFile && Connections.SendPath.Native.IsSupported ? PlaintextParts.SendPath : 0);
        if (asked == 0)
        {
            return;
        }

        (string Endpoint, PlaintextParts Part)[] covered;
        lock (state)
        {
            covered = state.PlaintextCovered.Select(c => (NameOf(c.Listen), c.Part)).ToArray();
        }

        ILogger logger = CreateLogger(services);
        foreach (string address in addresses.Where(a => a.StartsWith("http://", StringComparison.OrdinalIgnoreCase)))
        {
            PlaintextParts got = 0;
            foreach ((string endpoint, PlaintextParts part) in covered)
            {
                if (string.Equals(endpoint, address, StringComparison.OrdinalIgnoreCase))
                {
                    got |= part;
                }
            }

            PlaintextParts missing = asked & ~got;
            if (missing != 0)
            {
                string parts = string.Join(", ", new[]
                {
                    (missing & PlaintextParts.SendPath) != 0 ? "zero-copy send path" : null,
                    (missing & PlaintextParts.Lane) != 0 ? "static lane" : null,
                }.OfType<string>());
                Log.PlaintextPartsNotApplied(logger, parts, address);
            }
        }
    }

    // Kestrel binds URL addresses in order, one endpoint-defaults call each: the next address with this port (or this
    // socket path) is this endpoint's (two ":0" addresses stay in order). A Unix socket's address has port 0 too: it
    // must not lend its scheme to an IP endpoint on port 0, nor take one's.
    private static bool? TakeAddress(State state, int port, string? unixPath)
    {
        lock (state)
        {
            int index = state.Addresses?.FindIndex(a => unixPath is null ? a.UnixPath is null && a.Port == port : a.UnixPath == unixPath) ?? -1;
            if (index < 0)
            {
                return null;
            }

            bool https = state.Addresses![index].Https;
            state.Addresses.RemoveAt(index);
            return https;
        }
    }

    /// <summary>The endpoint as Kestrel names it in its addresses (<c>https://127.0.0.1:5443</c>).</summary>
    public static string NameOf(ListenOptions listen) => listen.ToString() ?? string.Empty;

    // One per application container (the host registers IOptions<> for every type), like FastFilesKestrelState; a
    // server without services (built by hand) gets a state of its own each time, which only loses the startup check.
    private static State StateOf(KestrelServerOptions options)
        => options.ApplicationServices?.GetService<IOptions<State>>()?.Value ?? new State();

    /// <summary>
    /// Records on which side of TLS a TLS-side part was added: parts see plaintext only when added after <c>UseHttps</c>;
    /// one added before it would see ciphertext and pass every connection through, which the startup check then names.
    /// </summary>
    public static void TrackTlsSide(ListenOptions listenOptions)
    {
        if (IsTls(listenOptions))
        {
            Covered(listenOptions);
            return;
        }

        listenOptions.Use(next =>
        {
            if (IsTls(listenOptions))
            {
                NotCovered(
                    listenOptions,
                    "FastFiles' connection parts were added before UseHttps(), so they would see encrypted bytes. Call listenOptions.UseHttps(...) first, then .UseFastFilesConnections().");
            }

            return next;
        });
    }

    // ListenOptions shows its scheme ("https://...") once UseHttps has run; Kestrel keeps the flag itself internal.
    internal static bool IsTls(ListenOptions listenOptions) => NameOf(listenOptions).StartsWith("https://", StringComparison.OrdinalIgnoreCase);

    private static ILogger CreateLogger(IServiceProvider services)
        => services.GetService<ILoggerFactory>()?.CreateLogger(LoggerCategory) ?? NullLogger.Instance;

    internal sealed class State
    {
        public List<(bool Https, int Port, string? UnixPath)>? Addresses;

        public bool AddressesSeen => Addresses is not null;

        public bool Registered;

        public KestrelServerOptions? Options;

        // FastFiles' endpoint-defaults callback, and the delegate last put in Kestrel's slot (it includes the former).
        public Action<ListenOptions>? Defaults;

        public Action<ListenOptions>? Installed;

        public List<(ListenOptions Listen, string Name, Action<ListenOptions> Apply)> AfterTls { get; } = [];

        public string Parts = string.Empty;

        public List<ListenOptions> Covered { get; } = [];

        public List<(ListenOptions Listen, string? Reason)> Reasons { get; } = [];

        public List<(ListenOptions Listen, PlaintextParts Part)> PlaintextCovered { get; } = [];
    }

    /// <summary>The opt-in parts a plaintext endpoint can have.</summary>
    [Flags]
    internal enum PlaintextParts
    {
        /// <summary>The HTTP/1.1 static lane.</summary>
        Lane = 1,

        /// <summary>The zero-copy send path.</summary>
        SendPath = 2,
    }
}
