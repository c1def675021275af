using FastFiles.Http;

namespace FastFiles.Tests.Http;

public sealed class ByteRangeParserTests
{
    private const string Huge = "123456789012345678901234567890";

    [Theory]
    [InlineData("bytes=0-0", 100, 0, 1)]
    [InlineData("bytes=0-99", 100, 0, 100)]
    [InlineData("bytes=99-99", 100, 99, 1)]
    [InlineData("bytes=99-", 100, 99, 1)]
    [InlineData("bytes=10-", 100, 10, 90)]
    [InlineData("bytes=10-19", 100, 10, 10)]
    [InlineData("bytes=50-1000", 100, 50, 50)]
    [InlineData("bytes=-1", 100, 99, 1)]
    [InlineData("bytes=-10", 100, 90, 10)]
    [InlineData("bytes=-100", 100, 0, 100)]
    [InlineData("bytes=-1000", 100, 0, 100)]
    [InlineData("BYTES=1-2", 100, 1, 2)]
    [InlineData("  bytes=1-2  ", 100, 1, 2)]
    [InlineData("bytes= 1 - 2 ", 100, 1, 2)]
    [InlineData("bytes=1-2,", 100, 1, 2)]
    [InlineData("bytes=1-2, ,", 100, 1, 2)]
    [InlineData("bytes=0-" + Huge, 100, 0, 100)]
    [InlineData("bytes=5-" + Huge, 100, 5, 95)]
    [InlineData("bytes=-" + Huge, 100, 0, 100)]
    [InlineData("bytes=0-9223372036854775807", 100, 0, 100)]
    [InlineData("bytes=0-", 1, 0, 1)]
    public void Single_ranges(string header, long length, long expectedStart, long expectedCount)
    {
        Assert.Equal(RangeKind.Single, ByteRangeParser.Parse(header, length, out long start, out long count));
        Assert.Equal(expectedStart, start);
        Assert.Equal(expectedCount, count);
    }

    [Theory]
    [InlineData("bytes=100-", 100)]
    [InlineData("bytes=100-200", 100)]
    [InlineData("bytes=1000-2000", 100)]
    [InlineData("bytes=-0", 100)]
    [InlineData("bytes=0-", 0)]
    [InlineData("bytes=0-0", 0)]
    [InlineData("bytes=" + Huge + "-", 100)]
    [InlineData("bytes=" + Huge + "-" + Huge, 100)]
    public void Unsatisfiable_ranges(string header, long length)
        => Assert.Equal(RangeKind.Unsatisfiable, ByteRangeParser.Parse(header, length, out _, out _));

    // RFC 9110 14.1.2: an empty representation's one satisfiable range has no Content-Range; the header is ignored.
    [Theory]
    [InlineData("bytes=-5")]
    [InlineData("bytes=-" + Huge)]
    public void A_suffix_of_an_empty_representation_is_ignored(string header)
        => Assert.Equal(RangeKind.None, ByteRangeParser.Parse(header, 0, out _, out _));

    [Theory]
    [InlineData("")]
    [InlineData("bytes")]
    [InlineData("bytes=")]
    [InlineData("bytes=-")]
    [InlineData("bytes=a-b")]
    [InlineData("bytes=1-a")]
    [InlineData("bytes=--1")]
    [InlineData("bytes=-1-2")]
    [InlineData("bytes=+1-2")]
    [InlineData("bytes=1.5-2")]
    [InlineData("bytes=5-1")]
    [InlineData("bytes=0x10-20")]
    [InlineData("bytes=10")]
    [InlineData("items=0-1")]
    [InlineData("bytes 0-1")]
    [InlineData("bytes=0-1,2-3")]
    [InlineData("bytes=0-1, 5-")]
    [InlineData("bytes=,0-1")]
    [InlineData("bytes=0-0,0-0,0-0,0-0,0-0,0-0,0-0,0-0,0-0,0-0,0-0,0-0")]
    [InlineData("bytes=\u0661-\u0662")]
    public void Malformed_not_bytes_or_multiple_ranges_are_ignored(string header)
    {
        Assert.Equal(RangeKind.None, ByteRangeParser.Parse(header, 100, out long start, out long count));
        Assert.Equal(0, start);
        Assert.Equal(0, count);
    }

    [Fact]
    public void Range_over_the_largest_length_stays_in_bounds()
    {
        Assert.Equal(RangeKind.Single, ByteRangeParser.Parse("bytes=" + (long.MaxValue - 1) + "-", long.MaxValue, out long start, out long count));
        Assert.Equal(long.MaxValue - 1, start);
        Assert.Equal(1, count);
    }
}
