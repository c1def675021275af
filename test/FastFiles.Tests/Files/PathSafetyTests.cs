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

    [Theory]
    [InlineData("/a/b", "/a/b")]
    [InlineData("//a", "/a")]
    [InlineData("/a//b///c/", "/a/b/c/")]
    [InlineData("////", "/")]
    [InlineData("/", "/")]
    public void Slash_runs_collapse_to_one(string path, string expected)
    {
        Assert.Equal(expected, PathSafety.CollapseSlashes(path));
        Span<char> inPlace = path.ToCharArray();
        Assert.Equal(expected, new string(inPlace[..PathSafety.CollapseSlashes(inPlace, inPlace)]));
        if (path == expected)
        {
            Assert.Same(path, PathSafety.CollapseSlashes(path));
        }
    }

    [Theory]
    [InlineData(0L, 0u, "1970-01-01T00:00:00.0000000")]
    [InlineData(1L, 999_999_999u, "1970-01-01T00:00:01.9999999")]
    [InlineData(-1L, 500u, "1969-12-31T23:59:59.0000005")]
    [InlineData(10_413_792_000L, 0u, "2300-01-01T00:00:00.0000000")]
    [InlineData(300_000_000_000L, 0u, "9999-12-31T23:59:59.0000000")]
    [InlineData(-70_000_000_000L, 0u, "0001-01-01T00:00:00.0000000")]
    public void File_times_become_ticks_without_overflow(long seconds, uint nanoseconds, string expected)
        => Assert.Equal(expected, new DateTime(FileStamp.TicksOf(seconds, nanoseconds), DateTimeKind.Utc).ToString("yyyy-MM-ddTHH:mm:ss.fffffff", System.Globalization.CultureInfo.InvariantCulture));
}
