using System.Text;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>
/// The escape corpus shared by every "nothing outside the root" test: a tree with a secret beside the served root,
/// symbolic links in and out of it, dotfiles, the traversal targets, and the refusal check.
/// </summary>
public static class EscapeCorpus
{
    /// <summary>The content of <c>secret.txt</c> and <c>passwd</c>, beside the served root.</summary>
    public const string Secret = "TOP-SECRET-4f1d9a";

    /// <summary>The content of the files in <c>outside/</c>, a directory beside the served root.</summary>
    public const string Outside = "OUTSIDE-DIR-77b2";

    /// <summary>The served root inside a tree written by <see cref="WriteTree"/>.</summary>
    public const string WebRoot = "www";

    /// <summary>
    /// Writes the tree: secrets beside <c>www</c>, files, dotfiles and links in and out of <c>www</c>
    /// (<see cref="LinksOut"/> and <c>link-in.txt</c>, <c>link-in-relative.txt</c>, <c>linkdir-in</c>).
    /// </summary>
    public static void WriteTree(TestFiles files)
    {
        files.Write("secret.txt", Encoding.ASCII.GetBytes(Secret));
        files.Write("passwd", Encoding.ASCII.GetBytes(Secret));
        files.Write("outside/outside.txt", Encoding.ASCII.GetBytes(Outside));
        files.Write("outside/index.html", Encoding.ASCII.GetBytes(Outside));
        files.Write("www/hello.txt", Encoding.ASCII.GetBytes("hello"));
        files.Write("www/sub/ok.txt", Encoding.ASCII.GetBytes("ok"));
        files.Write("www/sub/index.html", Encoding.ASCII.GetBytes("sub index"));
        files.Write("www/.env", Encoding.ASCII.GetBytes("dotenv"));
        files.Write("www/.git/config", Encoding.ASCII.GetBytes("gitconfig"));
        files.Write("www/sub/.hidden/x.txt", Encoding.ASCII.GetBytes("hidden"));
        File.CreateSymbolicLink(files.PathOf("www/link-in.txt"), files.PathOf("www/hello.txt"));
        File.CreateSymbolicLink(files.PathOf("www/link-in-relative.txt"), "sub/ok.txt");
        File.CreateSymbolicLink(files.PathOf("www/link-out.txt"), files.PathOf("secret.txt"));
        File.CreateSymbolicLink(files.PathOf("www/link-out-relative.txt"), "../secret.txt");
        File.CreateSymbolicLink(files.PathOf("www/link-to-link-out.txt"), files.PathOf("www/link-out.txt"));
        Directory.CreateSymbolicLink(files.PathOf("www/linkdir-out"), files.PathOf("outside"));
        Directory.CreateSymbolicLink(files.PathOf("www/linkdir-in"), files.PathOf("www/sub"));
    }

    /// <summary>Request paths (under the root) whose symbolic links lead out of it.</summary>
    public static TheoryData<string> LinksOut() => new()
    {
        "/link-out.txt",
        "/link-out-relative.txt",
        "/link-to-link-out.txt",
        "/linkdir-out/outside.txt",
    };

    /// <summary>Traversal targets: dot segments raw and encoded once or twice, backslashes, NUL, drive and UNC forms, huge paths.</summary>
    public static TheoryData<string> Traversal()
    {
        string[] corpus =
        [
            "/../secret.txt",
            "/../../secret.txt",
            "/%2e%2e/secret.txt",
            "/%2E%2E/secret.txt",
            "/.%2e/secret.txt",
            "/%2e%2e%2fsecret.txt",
            "/..%2fsecret.txt",
            "/..%2Fsecret.txt",
            "/%252e%252e/secret.txt",
            "/%252e%252e%252fsecret.txt",
            "/..\\secret.txt",
            "/..%5csecret.txt",
            "/%5c..%5csecret.txt",
            "/%2e%2e%5csecret.txt",
            "/sub/../../secret.txt",
            "/sub/%2e%2e/%2e%2e/secret.txt",
            "/sub/..%2f..%2fsecret.txt",
            "/%c0%ae%c0%ae/secret.txt",
            "/..;/secret.txt",
            "/...//secret.txt",
            "//etc/passwd",
            "///etc/passwd",
            "/etc/passwd",
            "/%00",
            "/a%00.txt",
            "/hello.txt%00.txt",
            "/../passwd",
            "/C:/secret.txt",
            "/C:%5csecret.txt",
            "/\\\\localhost\\c$\\secret.txt",
            "/" + new string('a', 300) + ".txt",
            "/" + string.Concat(Enumerable.Repeat("../", 2000)) + "secret.txt",
            "/" + string.Concat(Enumerable.Repeat("a/", 3000)) + "secret.txt",
            "/" + string.Concat(Enumerable.Repeat("%2e%2e/", 900)) + "secret.txt",
        ];
        var data = new TheoryData<string>();
        foreach (string path in corpus)
        {
            data.Add(path);
        }

        return data;
    }

    /// <summary>
    /// Asserts a refusal that leaks nothing: 400 or 404, or with <paramref name="anyClientError"/> any 4xx (what Kestrel
    /// or routing refuse before a handler runs, such as 414 for a huge target); no byte of a secret in the body.
    /// </summary>
    public static void AssertRefused(int status, byte[] body, string target, bool anyClientError = false)
    {
        Assert.True(anyClientError ? status is >= 400 and < 500 : status is 400 or 404, $"{target} -> {status}");
        string text = Encoding.Latin1.GetString(body);
        Assert.DoesNotContain(Secret, text, StringComparison.Ordinal);
        Assert.DoesNotContain(Outside, text, StringComparison.Ordinal);
        Assert.DoesNotContain("root:", text, StringComparison.Ordinal);
    }
}
