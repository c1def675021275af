using System.Text;
using Microsoft.AspNetCore.HostFiltering;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Options;

namespace FastFiles.Connections;

/// <summary>
/// The app's <c>AllowedHosts</c> (<see cref="HostFilteringOptions"/>) as the static lane applies them: a request whose
/// Host is not allowed is handed to Kestrel, where the app's host filtering answers it (400) as it would without the
/// lane. Patterns follow the middleware's: a host name matched without its port and regardless of case, <c>*.name</c>
/// for any subdomain of name (not name itself), and <c>*</c> (or no list) for any host. Follows reloads of the options.
/// </summary>
internal sealed class StaticLaneHostFilter
{
    private volatile Patterns? _patterns;

    private StaticLaneHostFilter(IOptionsMonitor<HostFilteringOptions> options)
    {
        _patterns = Build(options.CurrentValue);
        options.OnChange(o => _patterns = Build(o));
    }

    /// <summary>
    /// The filter for the app's options (any host while no <c>AllowedHosts</c> are configured); <see langword="null"/> only
    /// when the services hold no options at all.
    /// </summary>
    public static StaticLaneHostFilter? For(IServiceProvider services)
        => services.GetService(typeof(IOptionsMonitor<HostFilteringOptions>)) is IOptionsMonitor<HostFilteringOptions> options
            ? new StaticLaneHostFilter(options)
            : null;

    /// <summary>Whether <paramref name="host"/> (a simple <c>name[:port]</c>, as the lane's parser accepts it) is allowed.</summary>
    public bool Allows(ReadOnlySpan<byte> host)
    {
        Patterns? patterns = _patterns;
        if (patterns is null)
        {
            return true;
        }

        int colon = host.IndexOf((byte)':');
        ReadOnlySpan<byte> name = colon < 0 ? host : host[..colon];
        foreach (byte[] exact in patterns.Exact)
        {
            if (System.Text.Ascii.EqualsIgnoreCase(name, exact))
            {
                return true;
            }
        }

        foreach (byte[] suffix in patterns.Suffixes)
        {
            // "*.example.com" is ".example.com" here: a subdomain, with at least one byte before the dot.
            if (name.Length > suffix.Length && System.Text.Ascii.EqualsIgnoreCase(name[^suffix.Length..], suffix))
            {
                return true;
            }
        }

        return false;
    }

    // Null when any host is allowed.
    private static Patterns? Build(HostFilteringOptions options)
    {
        IList<string>? allowed = options.AllowedHosts;
        if (allowed is null || allowed.Count == 0)
        {
            return null;
        }

        var exact = new List<byte[]>();
        var suffixes = new List<byte[]>();
        foreach (string entry in allowed)
        {
            // Each entry as the middleware keeps it (MiddlewareConfigurationManager): HostString.ToUriComponent, which
            // gives internationalized names as the ASCII the Host field carries and keeps everything else as written.
            string pattern;
            try
            {
                pattern = new HostString(entry).ToUriComponent();
            }
            catch (ArgumentException)
            {
                // Not a name IdnMapping takes: nothing for the lane to match (the app decides those hosts).
                continue;
            }

            // The middleware's top-level wildcards (Http.Sys's and Kestrel's "any" addresses) turn filtering off.
            if (pattern is "*" or "[::]" or "0.0.0.0")
            {
                return null;
            }

            // HostString.MatchesAny compares the request's host without its port to the pattern as it is: a pattern with
            // a port (or any other ':', as in an IPv6 literal, which the lane never serves) matches no request at all.
            bool wildcard = pattern.StartsWith("*.", StringComparison.Ordinal);
            string name = wildcard ? pattern[1..] : pattern;
            if (name.Length == 0 || name.Contains(':', StringComparison.Ordinal) || name.StartsWith('[') || !Ascii.IsValid(name))
            {
                continue;
            }

            (wildcard ? suffixes : exact).Add(Encoding.ASCII.GetBytes(name));
        }

        return new Patterns([.. exact], [.. suffixes]);
    }

    private sealed record Patterns(byte[][] Exact, byte[][] Suffixes);
}
