using FastFiles.Files;
using Microsoft.AspNetCore.Http;

namespace FastFiles.StaticFiles;

/// <summary>
/// The <see cref="IFastFilesFingerprinter"/> of an app: each <c>UseFastFiles</c> root with content hashes and the file
/// cache registers here when it is built; a path goes to the root with the longest matching prefix.
/// </summary>
internal sealed class FastFilesFingerprinter : IFastFilesFingerprinter
{
    /// <summary>The query parameter that carries the hash, as ASP.NET Core's <c>asp-append-version</c> names it.</summary>
    public const string QueryName = "v";

    private const string QueryPrefix = "?" + QueryName + "=";

    private readonly Lock _lock = new();
    private volatile FastStaticFileMiddleware[] _roots = [];

    public void Register(FastStaticFileMiddleware root)
    {
        lock (_lock)
        {
            _roots = [.. _roots, root];
        }
    }

    public void Unregister(FastStaticFileMiddleware root)
    {
        lock (_lock)
        {
            _roots = Array.FindAll(_roots, r => !ReferenceEquals(r, root));
        }
    }

    public string GetUrl(string path)
    {
        ArgumentNullException.ThrowIfNull(path);
        ValueTask<string?> hash = HashAsync(path, wait: false, CancellationToken.None);
        // Without waiting, the lookup completes synchronously.
        return hash.IsCompletedSuccessfully && hash.Result is { } value ? Append(path, value) : path;
    }

    public async ValueTask<string> GetUrlAsync(string path, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(path);
        return await HashAsync(path, wait: true, cancellationToken) is { } value ? Append(path, value) : path;
    }

    /// <summary>The fingerprinted form of <paramref name="path"/> for a known quoted tag.</summary>
    public static string Append(string path, string quotedTag) => string.Concat(path.AsSpan(), QueryPrefix, quotedTag.AsSpan(1, quotedTag.Length - 2));

    /// <summary>
    /// The hash a request names: the value of the first <c>v</c> parameter of <paramref name="queryString"/> (with its
    /// leading <c>?</c>), read in place; empty when there is none.
    /// </summary>
    public static ReadOnlySpan<char> Requested(string? queryString)
    {
        ReadOnlySpan<char> rest = queryString;
        if (rest.IsEmpty)
        {
            return default;
        }

        rest = rest[1..];
        while (!rest.IsEmpty)
        {
            int amp = rest.IndexOf('&');
            ReadOnlySpan<char> pair = amp < 0 ? rest : rest[..amp];
            if (pair.Length > 2 && pair[0] == 'v' && pair[1] == '=')
            {
                return pair[2..];
            }

            rest = amp < 0 ? default : rest[(amp + 1)..];
        }

        return default;
    }

    /// <summary>
    /// Where a stale hash is sent: the request's path escaped (a Location is a URI reference, RFC 9110 10.2.2; the
    /// request's <see cref="PathString"/> is decoded) and its query as sent, the first <c>v</c> value replaced by
    /// <paramref name="quotedTag"/>'s and every other parameter kept.
    /// </summary>
    public static string Redirect(PathString path, string queryString, string quotedTag)
    {
        ReadOnlySpan<char> tag = quotedTag.AsSpan(1, quotedTag.Length - 2);

        // A trailing slash (a directory's default file) stays.
        string escaped = PathSafety.EscapeForLocation(path.Value!);
        for (int start = 1; start < queryString.Length;)
        {
            int amp = queryString.IndexOf('&', start);
            int end = amp < 0 ? queryString.Length : amp;
            if (end - start > 2 && queryString[start] == 'v' && queryString[start + 1] == '=')
            {
                return string.Concat(escaped.AsSpan(), queryString.AsSpan(0, start + 2), tag, queryString.AsSpan(end));
            }

            start = end + 1;
        }

        return string.Concat(escaped.AsSpan(), QueryPrefix, tag);
    }

    /// <summary>Whether a quoted tag is <paramref name="requested"/>.</summary>
    public static bool Names(ReadOnlySpan<char> requested, string quotedTag)
        => requested.SequenceEqual(quotedTag.AsSpan(1, quotedTag.Length - 2));

    private ValueTask<string?> HashAsync(string path, bool wait, CancellationToken cancellationToken)
    {
        if (path.Contains('?', StringComparison.Ordinal))
        {
            return new ValueTask<string?>((string?)null);
        }

        FastStaticFileMiddleware? best = null;
        int bestLength = -1;
        foreach (FastStaticFileMiddleware root in _roots)
        {
            int length = root.RequestPathValue.Length;
            if (length > bestLength && new PathString(path).StartsWithSegments(root.RequestPathValue, StringComparison.OrdinalIgnoreCase))
            {
                best = root;
                bestLength = length;
            }
        }

        return best is null ? new ValueTask<string?>((string?)null) : best.ContentTagAsync(path, wait, cancellationToken);
    }
}
