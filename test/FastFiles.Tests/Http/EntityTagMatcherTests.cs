using FastFiles.Http;
using Microsoft.Extensions.Primitives;

namespace FastFiles.Tests.Http;

public sealed class EntityTagMatcherTests
{
    private const string ETag = "\"abc-12\"";

    [Theory]
    [InlineData("\"abc-12\"", true)]
    [InlineData("\"other\", \"abc-12\"", true)]
    [InlineData("\"other\",\"abc-12\"", true)]
    [InlineData("  \"abc-12\"  ", true)]
    [InlineData(",, \"abc-12\" ,", true)]
    [InlineData("*", true)]
    [InlineData("W/\"abc-12\"", false)]
    [InlineData("\"ABC-12\"", false)]
    [InlineData("\"abc-1\"", false)]
    [InlineData("\"other\"", false)]
    [InlineData("abc-12, \"abc-12\"", true)]
    public void Strong_comparison(string header, bool expected)
        => Assert.Equal(expected, EntityTagMatcher.AnyMatches(header, ETag, strong: true));

    [Theory]
    [InlineData("\"abc-12\"", true)]
    [InlineData("W/\"abc-12\"", true)]
    [InlineData("W/\"x\", W/\"abc-12\"", true)]
    [InlineData("w/\"abc-12\"", null)]
    [InlineData("W/\"abc-13\"", false)]
    [InlineData("*", true)]
    public void Weak_comparison(string header, bool? expected)
        => Assert.Equal(expected, EntityTagMatcher.AnyMatches(header, ETag, strong: false));

    // An application's weak tag (a result's EntityTag): strong comparison never matches it, weak comparison ignores W/.
    [Theory]
    [InlineData("\"abc-12\"", true, false)]
    [InlineData("W/\"abc-12\"", true, false)]
    [InlineData("\"other\", W/\"abc-12\"", true, false)]
    [InlineData("\"abc-1\"", false, false)]
    [InlineData("\"W/abc-12\"", false, false)]
    [InlineData("*", true, true)]
    public void A_weak_own_tag(string header, bool weakResult, bool strongResult)
    {
        Assert.Equal(weakResult, EntityTagMatcher.AnyMatches(header, "W/" + ETag, strong: false));
        Assert.Equal(strongResult, EntityTagMatcher.AnyMatches(header, "W/" + ETag, strong: true));
    }

    // RFC 9110 13.1.1/13.1.2: If-Match = "*" / #entity-tag. A "*" matches only as the whole field value; in a list, or
    // followed by anything, it is a malformed member (skipped), as nginx reads it.
    [Theory]
    [InlineData(" * ", true)]
    [InlineData("\"other\", *", false)]
    [InlineData("*, \"other\"", false)]
    [InlineData("*, \"abc-12\"", true)]
    [InlineData("*x", null)]
    [InlineData("**", null)]
    public void A_star_counts_only_as_the_whole_value(string header, bool? expected)
    {
        Assert.Equal(expected, EntityTagMatcher.AnyMatches(header, ETag, strong: true));
        Assert.Equal(expected, EntityTagMatcher.AnyMatches(new StringValues(header), ETag, strong: false));
    }

    [Fact]
    public void A_star_on_one_of_several_field_lines_is_a_malformed_member()
    {
        Assert.False(EntityTagMatcher.AnyMatches(new StringValues(["*", "\"other\""]), ETag, strong: false));
        Assert.Null(EntityTagMatcher.AnyMatches(new StringValues(["*", ""]), ETag, strong: false));
    }

    [Theory]
    [InlineData("abc-12")]
    [InlineData("\"abc-12")]
    [InlineData("W/")]
    [InlineData(",,,")]
    [InlineData("\"abc-12\"x")]
    public void A_list_without_any_well_formed_member_is_ignored(string header)
        => Assert.Null(EntityTagMatcher.AnyMatches(header, ETag, strong: false));

    [Fact]
    public void Several_field_lines_are_one_list()
    {
        Assert.True(EntityTagMatcher.AnyMatches(new StringValues(["\"x\"", "\"abc-12\""]), ETag, strong: true));
        Assert.False(EntityTagMatcher.AnyMatches(new StringValues(["\"x\"", "\"y\""]), ETag, strong: true));
    }

    [Fact]
    public void TryReadTag_reads_one_tag_and_leaves_the_rest()
    {
        ReadOnlySpan<char> input = "W/\"a,b\" , \"c\"";
        Assert.True(EntityTagMatcher.TryReadTag(ref input, out ReadOnlySpan<char> tag, out bool weak));
        Assert.True(weak);
        Assert.Equal("\"a,b\"", tag.ToString());
        Assert.Equal(", \"c\"", input.ToString());
    }

    [Fact]
    public void Quoted_commas_do_not_split_a_tag()
        => Assert.True(EntityTagMatcher.AnyMatches("\"a,b\"", "\"a,b\"", strong: true));
}
