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
        string first = System.Text.Encoding.ASCII.GetString(layout.Parts[0].Header.Span);
        string second = System.Text.Encoding.ASCII.GetString(layout.Parts[1].Header.Span);
        Assert.Equal($"--{layout.Boundary}\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-9/100\r\n\r\n", first);
        Assert.Equal($"\r\n--{layout.Boundary}\r\nContent-Type: text/plain\r\nContent-Range: bytes 50-54/100\r\n\r\n", second);
        Assert.Equal($"\r\n--{layout.Boundary}--\r\n", System.Text.Encoding.ASCII.GetString(layout.Closing.Span));
        Assert.Equal(first.Length + 10 + second.Length + 5 + layout.Closing.Length, layout.ContentLength);
        Assert.NotEqual(layout.Boundary, MultipartByteRanges.Create([new ByteRange(0, 1)], 1, null).Boundary);
    }

    [Theory]
    [InlineData(0L, 9L, 10L)]
    [InlineData(9L, 10L, 100L)]
    [InlineData(99L, 1000L, 1001L)]
    [InlineData(2147483647L, 4294967296L, 9999999999L)]
    [InlineData(999999999999L, 1000000000000L, long.MaxValue)]
    public void Multipart_part_headers_carry_every_digit_without_a_content_type(long first, long second, long length)
    {
        var layout = MultipartByteRanges.Create([new ByteRange(first, 1), new ByteRange(second, 1)], length, null);
        string b = layout.Boundary;
        string text = System.Text.Encoding.ASCII.GetString(layout.Parts[0].Header.Span) + "x"
            + System.Text.Encoding.ASCII.GetString(layout.Parts[1].Header.Span) + "y"
            + System.Text.Encoding.ASCII.GetString(layout.Closing.Span);
        Assert.Equal($"--{b}\r\nContent-Range: bytes {first}-{first}/{length}\r\n\r\nx\r\n--{b}\r\nContent-Range: bytes {second}-{second}/{length}\r\n\r\ny\r\n--{b}--\r\n", text);
        Assert.Equal(text.Length, layout.ContentLength);
        Assert.Equal("multipart/byteranges; boundary=" + b, layout.ContentType);
    }

    [Fact]
    public void Multipart_parts_reach_a_length_on_average_without_overflow()
    {
        var layout = MultipartByteRanges.Create([new ByteRange(0, 10), new ByteRange(50, 5)], 100, "text/plain");
        Assert.Equal(15, layout.RangeBytes);
        Assert.True(layout.PartsReach(7));
        Assert.False(layout.PartsReach(8));
        Assert.True(layout.PartsReach(0));
        Assert.False(layout.PartsReach(long.MaxValue));
    }

    [Fact]
    public void Multipart_boundaries_do_not_repeat_across_refills_of_the_random_buffer()
    {
        // 85 boundaries per refill: 1,000 cross eleven of them.
        var seen = new HashSet<string>(StringComparer.Ordinal);
        for (int i = 0; i < 1000; i++)
        {
            string boundary = MultipartByteRanges.Create([new ByteRange(0, 1)], 1, null).Boundary;
            Assert.Matches("^[0-9a-f]{24}$", boundary);
            Assert.True(seen.Add(boundary), $"boundary {boundary} came twice");
        }
    }
}
