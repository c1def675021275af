using System.Globalization;
using System.Text;
using Microsoft.AspNetCore.HostFiltering;
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
        var idn = new IdnMapping();
        foreach (string entry in allowed)
        {
            string pattern = entry.Trim();
            if (pattern == "*")
            {
                return null;
            }

            // A port in a pattern is ignored, as the middleware does; IPv6 literals never reach the lane.
            int colon = pattern.LastIndexOf(':');
            if (colon > 0 && !pattern.StartsWith('['))
            {
                pattern = pattern[..colon];
            }

            bool wildcard = pattern.StartsWith("*.", StringComparison.Ordinal);
            string name = wildcard ? pattern[2..] : pattern;
            if (name.Length == 0 || name.StartsWith('['))
            {
                continue;
            }

            // Internationalized names as the ASCII the Host field carries.
            name = idn.GetAscii(name);
            (wildcard ? suffixes : exact).Add(Encoding.ASCII.GetBytes(wildcard ? "." + name : name));
        }

        return new Patterns([.. exact], [.. suffixes]);
    }

    private sealed record Patterns(byte[][] Exact, byte[][] Suffixes);
}
