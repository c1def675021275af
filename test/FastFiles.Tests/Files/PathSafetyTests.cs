using FastFiles.Files;

namespace FastFiles.Tests.Files;

public sealed class PathSafetyTests
{
    [Theory]
    [InlineData("/")]
    [InlineData("/a.txt")]
    [InlineData("/sub/a.txt")]
    [InlineData("//a.txt")]
    [InlineData("/a..b.txt")]
    [InlineData("/a.")]
    [InlineData("/sub/")]
    [InlineData("/%2e%2e/x")]
    public void Servable(string path)
    {
        Assert.True(PathSafety.IsServable(path, allowDotFiles: false));
        Assert.True(PathSafety.IsServable(path, allowDotFiles: true));
    }

    [Theory]
    [InlineData("")]
    [InlineData("a.txt")]
    [InlineData("/..")]
    [InlineData("/../secret.txt")]
    [InlineData("/sub/../../secret.txt")]
    [InlineData("/./a.txt")]
    [InlineData("/sub/.")]
    [InlineData("/..\\secret.txt")]
    [InlineData("/\\..\\secret.txt")]
    [InlineData("/a\0.txt")]
    [InlineData("/\0")]
    public void Never_servable(string path)
    {
        Assert.False(PathSafety.IsServable(path, allowDotFiles: false));
        Assert.False(PathSafety.IsServable(path, allowDotFiles: true));
    }

    [Theory]
    [InlineData("/.env")]
    [InlineData("/.git/config")]
    [InlineData("/sub/.hidden/x.txt")]
    [InlineData("/sub/.hidden")]
    [InlineData("/..%2fsecret.txt")]
    public void Dot_segments_need_the_option(string path)
    {
        Assert.False(PathSafety.IsServable(path, allowDotFiles: false));
        Assert.True(PathSafety.IsServable(path, allowDotFiles: true));
    }
}
