using FastFiles.Http;

namespace FastFiles.Tests.Http;

public sealed class ByteRangeSetTests
{
    [Theory]
    [InlineData("bytes=0-9,20-29", "0+10,20+10")]
    [InlineData("bytes=20-29,0-9", "20+10,0+10")]
    [InlineData("bytes=-10, 0-0", "90+10,0+1")]
    [InlineData("bytes=0-9,,20-", "0+10,20+80")]
    [InlineData("bytes=0-9,30-39,5-14", "0+15,30+10")]
    [InlineData("bytes=50-59,0-9,1000-", "50+10,0+10")]
    public void Several_ranges_keep_their_order_unless_coalesced(string header, string expected)
    {
        Assert.Equal(RangeKind.Multiple, ByteRangeSet.Parse(header, 100, 64, out ByteRange[]? ranges, out _, out _));
        Assert.Equal(expected, string.Join(",", ranges!.Select(r => $"{r.Start}+{r.Count}")));
    }

    [Theory]
    [InlineData("bytes=0-9,10-19", 0, 20)]
    [InlineData("bytes=0-9,5-14", 0, 15)]
    [InlineData("bytes=10-19,0-9", 0, 20)]
    [InlineData("bytes=0-9,100-", 0, 10)]
    public void A_set_that_coalesces_to_one_range_is_single(string header, long start, long count)
    {
        Assert.Equal(RangeKind.Single, ByteRangeSet.Parse(header, 100, 64, out ByteRange[]? ranges, out long s, out long c));
        Assert.Null(ranges);
        Assert.Equal((start, count), (s, c));
    }

    [Theory]
    [InlineData("bytes=0-,0-")]
    [InlineData("bytes=0-59,40-99")]
    [InlineData("bytes=0-1,2-3,4-5")]
    [InlineData("bytes=0-1,x")]
    [InlineData("bytes=0-1,5-1")]
    [InlineData("items=0-1,2-3")]
    [InlineData("bytes=,")]
    public void Too_many_too_much_or_malformed_is_ignored(string header)
        => Assert.Equal(RangeKind.None, ByteRangeSet.Parse(header, 100, 2, out _, out _, out _));

    [Fact]
    public void Nothing_satisfiable_is_416()
        => Assert.Equal(RangeKind.Unsatisfiable, ByteRangeSet.Parse("bytes=100-,200-300,-0", 100, 64, out _, out _, out _));

    [Fact]
    public void Multipart_layout_counts_every_byte_it_will_send()
    {
        var layout = MultipartByteRanges.Create([new ByteRange(0, 10), new ByteRange(50, 5)], 100, "text/plain");
        Assert.Matches("^[0-9a-f]{24}$", layout.Boundary);
        string first = System.Text.Encoding.ASCII.GetString(layout.Parts[0].Header);
        string second = System.Text.Encoding.ASCII.GetString(layout.Parts[1].Header);
        Assert.Equal($"--{layout.Boundary}\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-9/100\r\n\r\n", first);
        Assert.Equal($"\r\n--{layout.Boundary}\r\nContent-Type: text/plain\r\nContent-Range: bytes 50-54/100\r\n\r\n", second);
        Assert.Equal($"\r\n--{layout.Boundary}--\r\n", System.Text.Encoding.ASCII.GetString(layout.Closing));
        Assert.Equal(first.Length + 10 + second.Length + 5 + layout.Closing.Length, layout.ContentLength);
        Assert.NotEqual(layout.Boundary, MultipartByteRanges.Create([new ByteRange(0, 1)], 1, null).Boundary);
    }
}
