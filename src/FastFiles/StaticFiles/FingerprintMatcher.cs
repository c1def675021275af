using Microsoft.AspNetCore.Builder;
using System.Text.RegularExpressions;

namespace FastFiles.StaticFiles;

/// <summary>
/// Decides whether a path is fingerprinted (served <c>immutable</c>). The default pattern is source-generated: its
/// quantifiers are bounded and cannot backtrack across dots, so it needs no timeout, and no regular expression is
/// compiled at run time. A custom pattern is compiled with a 100 ms timeout and matched once at construction, so the
/// one-time cost of compiling it (measured at over 500 ms under load) is not charged to a request's timeout; a
/// match that still times out counts as "not fingerprinted", the safe answer.
/// </summary>
internal sealed partial class FingerprintMatcher
{
    private readonly Regex _regex;

    private FingerprintMatcher(Regex regex)
    {
        _regex = regex;
        IsMatch("/warm-up.0123456789.js");
    }

    public static FingerprintMatcher? Create(string? pattern)
    {
        if (string.IsNullOrEmpty(pattern))
        {
            return null;
        }

        return new FingerprintMatcher(pattern == FastStaticFileOptions.DefaultFingerprintPattern
            ? Default()
            : new Regex(pattern, RegexOptions.CultureInvariant | RegexOptions.Compiled, TimeSpan.FromMilliseconds(100)));
    }

    public bool IsMatch(string path)
    {
        try
        {
            return _regex.IsMatch(path);
        }
        catch (RegexMatchTimeoutException)
        {
            return false;
        }
    }

    [GeneratedRegex(FastStaticFileOptions.DefaultFingerprintPattern, RegexOptions.CultureInvariant)]
    private static partial Regex Default();
}
