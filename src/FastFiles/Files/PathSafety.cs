namespace FastFiles.Files;

/// <summary>
/// Rejects request paths that could name something outside the served root or that the options exclude.
/// Kestrel has already percent-decoded the path (except <c>%2F</c>) and removed dot segments; this is the
/// second line of defence for hosts that do not, and the place where dotfiles are filtered.
/// </summary>
internal static class PathSafety
{
    private const string WellKnown = ".well-known";

    public static bool IsServable(ReadOnlySpan<char> subpath, bool allowDotFiles)
    {
        // The sub-path always starts with '/' (it comes from PathString).
        if (subpath.IsEmpty || subpath[0] != '/')
        {
            return false;
        }

        // NUL truncates paths in native APIs; a backslash is a separator on Windows and never part of a URL
        // path we serve; ':' would name a drive or an alternate data stream on Windows.
        if (subpath.IndexOfAny('\0', '\\') >= 0 || (OperatingSystem.IsWindows() && subpath.Contains(':')))
        {
            return false;
        }

        ReadOnlySpan<char> path = subpath[1..];
        foreach (Range range in path.Split('/'))
        {
            ReadOnlySpan<char> segment = path[range];
            if (segment.Length == 0)
            {
                continue;
            }

            if (segment[0] == '.')
            {
                // ".", ".." and, unless allowed, dotfiles and dot-directories at any depth, except the directory of
                // well-known URIs (RFC 8615: ACME challenges, security.txt, app links), whose own dotfiles stay refused.
                if (segment is "." or ".." || (!allowDotFiles && !(segment is WellKnown && range.End.Value < path.Length)))
                {
                    return false;
                }
            }
        }

        return true;
    }

    /// <summary>
    /// A decoded request path (a <c>PathString</c> value) as the path of a Location (RFC 9110 10.2.2): slash runs collapsed,
    /// so it never starts with <c>//</c> (another host, RFC 3986 4.2), and every segment escaped in full. PathString's own
    /// escaping keeps a decoded <c>%3F</c> as it is, which a client would then decode to <c>?</c> and so name another file.
    /// </summary>
    public static string EscapeForLocation(string path)
        => string.Join('/', CollapseSlashes(path).Split('/').Select(Uri.EscapeDataString));

    /// <summary>
    /// <paramref name="path"/> with every run of slashes made one: <c>//a///b</c> names the file <c>/a/b</c> names, so
    /// both must share one cache entry (the watcher drops entries by the file's own path) and a redirect built from it
    /// can never start with <c>//</c>, which a browser reads as another host. The same string when there is nothing to
    /// collapse.
    /// </summary>
    public static string CollapseSlashes(string path)
    {
        if (!path.Contains("//", StringComparison.Ordinal))
        {
            return path;
        }

        Span<char> buffer = path.Length <= 512 ? stackalloc char[path.Length] : new char[path.Length];
        return new string(buffer[..CollapseSlashes(path, buffer)]);
    }

    /// <summary>Writes <paramref name="path"/> with its slash runs collapsed to <paramref name="destination"/> (at least as long); returns the length.</summary>
    public static int CollapseSlashes(ReadOnlySpan<char> path, Span<char> destination)
    {
        int length = 0;
        for (int i = 0; i < path.Length; i++)
        {
            if (path[i] != '/' || length == 0 || destination[length - 1] != '/')
            {
                destination[length++] = path[i];
            }
        }

        return length;
    }
}
