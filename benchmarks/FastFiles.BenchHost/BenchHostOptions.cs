using System.Globalization;

namespace FastFiles.BenchHost;

internal sealed class BenchHostOptions
{
    public string Mode { get; private init; } = "fastfiles";

    public string Root { get; private init; } = Directory.GetCurrentDirectory();

    public int HttpPort { get; private init; } = 5080;

    public int HttpsPort { get; private init; } = 5443;

    /// <summary>HTTP/2 cleartext (prior knowledge); no such endpoint when not given.</summary>
    public int? H2cPort { get; private init; }

    /// <summary>A PFX, or a PEM certificate with <see cref="KeyPath"/> (the harness shares its PEM pair with nginx).</summary>
    public string CertificatePath { get; private init; } = "";

    public string? KeyPath { get; private init; }

    public static BenchHostOptions Parse(string[] args)
    {
        var values = new Dictionary<string, string>(StringComparer.Ordinal);
        for (int i = 0; i < args.Length; i++)
        {
            if (!args[i].StartsWith("--", StringComparison.Ordinal) || i + 1 >= args.Length)
            {
                throw new ArgumentException($"Expected '--name value' pairs, got '{args[i]}'.");
            }

            values[args[i][2..]] = args[++i];
        }

        var known = new HashSet<string>(["mode", "root", "http-port", "https-port", "h2c-port", "cert", "key"], StringComparer.Ordinal);
        foreach (string name in values.Keys.Where(k => !known.Contains(k)))
        {
            throw new ArgumentException($"Unknown option --{name}.");
        }

        string root = Path.GetFullPath(values.GetValueOrDefault("root") ?? Directory.GetCurrentDirectory());
        if (!Directory.Exists(root))
        {
            throw new DirectoryNotFoundException(root);
        }

        return new BenchHostOptions
        {
            Mode = values.GetValueOrDefault("mode") ?? "fastfiles",
            Root = root,
            HttpPort = values.TryGetValue("http-port", out string? http) ? int.Parse(http, CultureInfo.InvariantCulture) : 5080,
            HttpsPort = values.TryGetValue("https-port", out string? https) ? int.Parse(https, CultureInfo.InvariantCulture) : 5443,
            H2cPort = values.TryGetValue("h2c-port", out string? h2c) ? int.Parse(h2c, CultureInfo.InvariantCulture) : null,
            CertificatePath = values.GetValueOrDefault("cert") ?? throw new ArgumentException("--cert is required (PFX, or PEM with --key)."),
            KeyPath = values.GetValueOrDefault("key"),
        };
    }
}
