using FastFiles.Files;
using FastFiles.Http;
using Microsoft.Extensions.Primitives;

namespace FastFiles.Tests.Http;

public sealed class AcceptEncodingTests
{
    private const int All = (int)(ContentCodings.Brotli | ContentCodings.Zstd | ContentCodings.Gzip);

    [Theory]
    [InlineData("", All, (int)ContentCodings.None)]
    [InlineData("gzip", All, (int)ContentCodings.Gzip)]
    [InlineData("gzip, br", All, (int)ContentCodings.Brotli)]
    [InlineData("gzip, deflate, br, zstd", All, (int)ContentCodings.Brotli)]
    [InlineData("gzip, zstd", All, (int)ContentCodings.Zstd)]
    [InlineData("br;q=0.5, gzip;q=0.9", All, (int)ContentCodings.Gzip)]
    [InlineData("br;q=0.9, gzip;q=0.9", All, (int)ContentCodings.Brotli)]
    [InlineData("br;q=1.0, gzip;q=0.9", All, (int)ContentCodings.Brotli)]
    [InlineData("br;q=0.001", All, (int)ContentCodings.Brotli)]
    [InlineData("br;q=0", All, (int)ContentCodings.None)]
    [InlineData("br;q=0.000", All, (int)ContentCodings.None)]
    [InlineData("br;q=0, gzip;q=0", All, (int)ContentCodings.None)]
    [InlineData("gzip;q=0, br", (int)ContentCodings.Gzip, (int)ContentCodings.None)]
    [InlineData("gzip", (int)ContentCodings.Brotli, (int)ContentCodings.None)]
    [InlineData("br", (int)ContentCodings.Gzip, (int)ContentCodings.None)]
    [InlineData("*", All, (int)ContentCodings.Brotli)]
    [InlineData("*", (int)ContentCodings.Gzip, (int)ContentCodings.Gzip)]
    [InlineData("*;q=0", All, (int)ContentCodings.None)]
    [InlineData("*, br;q=0", All, (int)ContentCodings.Zstd)]
    [InlineData("*, br;q=0, zstd;q=0", All, (int)ContentCodings.Gzip)]
    // "*" ranks every coding not listed, identity included (RFC 9110 12.5.3).
    [InlineData("gzip;q=0.5, *", (int)ContentCodings.Gzip, (int)ContentCodings.None)]
    [InlineData("gzip;q=0.5, *;q=0.9", (int)ContentCodings.Gzip, (int)ContentCodings.None)]
    [InlineData("gzip;q=0.5, *;q=0.4", (int)ContentCodings.Gzip, (int)ContentCodings.Gzip)]
    [InlineData("gzip, *", (int)ContentCodings.Gzip, (int)ContentCodings.Gzip)]
    [InlineData("gzip;q=0.5, *", All, (int)ContentCodings.Brotli)]
    [InlineData("gzip;q=0.5, *, identity;q=0.1", (int)ContentCodings.Gzip, (int)ContentCodings.Gzip)]
    [InlineData("gzip;q=0.5, identity;q=0.8", All, (int)ContentCodings.None)]
    [InlineData("gzip;q=0.8, identity;q=0.8", All, (int)ContentCodings.Gzip)]
    [InlineData("gzip;q=0.1, identity;q=0", All, (int)ContentCodings.Gzip)]
    [InlineData("identity;q=0", (int)ContentCodings.Gzip, (int)ContentCodings.None)]
    [InlineData("GZIP", All, (int)ContentCodings.Gzip)]
    [InlineData("x-gzip", All, (int)ContentCodings.Gzip)]
    [InlineData("gzip ; q=0.5", All, (int)ContentCodings.Gzip)]
    [InlineData("gzip;Q=0.5", All, (int)ContentCodings.Gzip)]
    [InlineData("br;q=2", All, (int)ContentCodings.None)]
    [InlineData("br;q=abc", All, (int)ContentCodings.None)]
    [InlineData("br;q=-1", All, (int)ContentCodings.None)]
    [InlineData("br;level=1", All, (int)ContentCodings.None)]
    [InlineData(",,gzip,,", All, (int)ContentCodings.Gzip)]
    [InlineData("deflate, compress", All, (int)ContentCodings.None)]
    public void Select(string header, int available, int expected)
        => Assert.Equal((ContentCodings)expected, AcceptEncoding.Parse(header).Select((ContentCodings)available));

    [Fact]
    public void Several_field_lines_are_one_list()
        => Assert.Equal(ContentCodings.Brotli, AcceptEncoding.Parse(new StringValues(["gzip;q=0.5", "br"])).Select((ContentCodings)All));

    [Theory]
    [InlineData("", 1000)]
    [InlineData("gzip", 1000)]
    [InlineData("identity;q=0", 0)]
    [InlineData("identity;q=0.5", 500)]
    [InlineData("*;q=0", 0)]
    [InlineData("*;q=0, identity", 1000)]
    [InlineData("*;q=0.3", 1000)]
    public void Identity_quality(string header, int expected)
        => Assert.Equal(expected, AcceptEncoding.Parse(header).IdentityQuality);

    [Theory]
    [InlineData("br;q=0.25", (int)ContentCodings.Brotli, 250)]
    [InlineData("br;q=0.25", (int)ContentCodings.Gzip, 0)]
    [InlineData("*;q=0.4", (int)ContentCodings.Zstd, 400)]
    [InlineData("*;q=0.4, zstd;q=0.9", (int)ContentCodings.Zstd, 900)]
    public void Quality_of(string header, int coding, int expected)
        => Assert.Equal(expected, AcceptEncoding.Parse(header).QualityOf((ContentCodings)coding));
}
