using FastFiles.StaticFiles;
using Microsoft.AspNetCore.Http;

namespace FastFiles.Tests.StaticFiles;

/// <summary>The Location a stale content hash is redirected to: an escaped URI reference with the request's other parameters.</summary>
public sealed class FingerprintRedirectTests
{
    private const string Tag = "\"vhi4X3f8Qe-_0a1b2c3d4e\"";

    [Theory]
    [InlineData("/reports/daily.css", "?v=old", "/reports/daily.css?v=vhi4X3f8Qe-_0a1b2c3d4e")]
    [InlineData("/reports/x y.css", "?x=1&v=old&y=%20", "/reports/x%20y.css?x=1&v=vhi4X3f8Qe-_0a1b2c3d4e&y=%20")]
    [InlineData("/sub/\u00e9.txt", "?v=old", "/sub/%C3%A9.txt?v=vhi4X3f8Qe-_0a1b2c3d4e")]
    [InlineData("/a?b#c.txt", "?v=old&v=older", "/a%3Fb%23c.txt?v=vhi4X3f8Qe-_0a1b2c3d4e&v=older")]
    [InlineData("/r.css", "?vv=1&v=x", "/r.css?vv=1&v=vhi4X3f8Qe-_0a1b2c3d4e")]
    [InlineData("/base/q%3F.css", "?v=old", "/base/q%253F.css?v=vhi4X3f8Qe-_0a1b2c3d4e")]
    // Empty segments go: "//sub/a.js" would be a network-path reference, host "sub" (RFC 3986 4.2).
    [InlineData("//sub/a.js", "?v=old", "/sub/a.js?v=vhi4X3f8Qe-_0a1b2c3d4e")]
    [InlineData("/app///sub//a.js", "?v=old", "/app/sub/a.js?v=vhi4X3f8Qe-_0a1b2c3d4e")]
    // A directory's default file keeps its trailing slash (without it, one more redirect).
    [InlineData("/hash/site/", "?v=old", "/hash/site/?v=vhi4X3f8Qe-_0a1b2c3d4e")]
    public void The_path_is_escaped_and_only_the_first_v_value_is_replaced(string path, string query, string expected)
    {
        string location = FastFilesFingerprinter.Redirect(new PathString(path), query, Tag);
        Assert.Equal(expected, location);
        Assert.True(Uri.IsWellFormedUriString(location, UriKind.Relative), location);
    }
}
