namespace FastFiles.Files;

/// <summary>
/// Rejects request paths that could name something outside the served root or that the options exclude.
/// Kestrel has already percent-decoded the path (except <c>%2F</c>) and removed dot segments; this is the
/// second line of defence for hosts that do not, and the place where dotfiles are filtered.
/// </summary>
internal static class PathSafety
{
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

        foreach (Range range in subpath[1..].Split('/'))
        {
            ReadOnlySpan<char> segment = subpath[1..][range];
            if (segment.Length == 0)
            {
                continue;
            }

            if (segment[0] == '.')
            {
                // ".", ".." and, unless allowed, dotfiles and dot-directories at any depth.
                if (segment is "." or ".." || !allowDotFiles)
                {
                    return false;
                }
            }
        }

        return true;
    }
}
