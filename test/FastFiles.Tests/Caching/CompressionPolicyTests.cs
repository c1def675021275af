using System.IO.Compression;
using FastFiles.Caching;
using FastFiles.Files;
using Microsoft.AspNetCore.Builder;

namespace FastFiles.Tests.Caching;

public sealed class CompressionPolicyTests
{
    private static readonly CompressionPolicy Defaults = new FastStaticFileOptions { EnableDynamicCompression = true }.CreateCompressionPolicy(new FastFilesOptions())!;

    [Theory]
    [InlineData("text/css", true)]
    [InlineData("text/html; charset=utf-8", true)]
    [InlineData("TEXT/JAVASCRIPT", true)]
    [InlineData("text/plain ; charset=us-ascii", true)]
    [InlineData("application/json", true)]
    [InlineData("application/manifest+json", true)]
    [InlineData("image/svg+xml", true)]
    [InlineData("application/wasm", true)]
    [InlineData("application/xml", true)]
    [InlineData("font/ttf", true)]
    [InlineData("image/png", false)]
    [InlineData("font/woff2", false)]
    [InlineData("application/octet-stream", false)]
    [InlineData("application/zip", false)]
    [InlineData("texts/css", false)]
    [InlineData("", false)]
    [InlineData(null, false)]
    public void Default_types(string? contentType, bool compressible)
        => Assert.Equal(compressible ? ContentCodings.Brotli | ContentCodings.Gzip : ContentCodings.None, Defaults.CodingsFor(contentType, 10_000));

    [Theory]
    [InlineData(1023, false)]
    [InlineData(1024, true)]
    [InlineData(8L * 1024 * 1024, true)]
    [InlineData(8L * 1024 * 1024 + 1, false)]
    public void Default_sizes(long length, bool compressible)
        => Assert.Equal(compressible, Defaults.CodingsFor("text/css", length) != ContentCodings.None);

    [Fact]
    public void Defaults_are_stated()
    {
        var options = new FastStaticFileOptions();
        var fast = new FastFilesOptions();
        Assert.False(options.EnableDynamicCompression);
        Assert.Null(options.CreateCompressionPolicy(fast));
        Assert.Null(options.CompressibleContentTypes);
        Assert.Equal(1024, options.DynamicCompressionMinimumSize);
        Assert.Equal(8L * 1024 * 1024, options.DynamicCompressionMaximumSize);
        Assert.Equal(6, fast.BrotliCompressionQuality);
        Assert.Equal(6, fast.GzipCompressionLevel);
    }

    [Fact]
    public void A_configured_list_replaces_the_defaults_and_wildcards_match_subtypes()
    {
        var policy = new CompressionPolicy(["application/x-custom", "font/*"], 0, 100, 5, 6);
        Assert.NotEqual(ContentCodings.None, policy.CodingsFor("application/x-custom", 10));
        Assert.NotEqual(ContentCodings.None, policy.CodingsFor("font/otf", 10));
        Assert.Equal(ContentCodings.None, policy.CodingsFor("text/css", 10));
        Assert.Equal(ContentCodings.None, policy.CodingsFor("fonts/otf", 10));
    }

    [Theory]
    [InlineData(-1, 6)]
    [InlineData(12, 6)]
    [InlineData(6, 0)]
    [InlineData(6, 10)]
    public void Levels_out_of_range_are_refused(int brotli, int gzip)
        => Assert.Throws<ArgumentOutOfRangeException>(() => new CompressionPolicy(["text/css"], 0, 10, brotli, gzip));

    [Theory]
    [InlineData(-1, 10)]
    [InlineData(10, 9)]
    [InlineData(0, 3L * 1024 * 1024 * 1024)]
    public void Sizes_out_of_range_are_refused(long minimum, long maximum)
        => Assert.Throws<ArgumentOutOfRangeException>(() => new CompressionPolicy(["text/css"], minimum, maximum, 6, 6));

    [Fact]
    public void Output_round_trips_and_incompressible_input_gives_none()
    {
        byte[] text = System.Text.Encoding.ASCII.GetBytes(string.Concat(Enumerable.Range(0, 500).Select(i => $".c{i} {{ color: red; }}\n")));
        byte[] br = Defaults.Compress(ContentCodings.Brotli, text)!;
        byte[] gzip = Defaults.Compress(ContentCodings.Gzip, text)!;
        Assert.True(br.Length < text.Length / 4);
        Assert.Equal(text, Decode(new BrotliStream(new MemoryStream(br), CompressionMode.Decompress)));
        Assert.Equal(text, Decode(new GZipStream(new MemoryStream(gzip), CompressionMode.Decompress)));

        byte[] noise = new byte[4096];
        new Random(7).NextBytes(noise);
        Assert.Null(Defaults.Compress(ContentCodings.Brotli, noise));
        Assert.Null(Defaults.Compress(ContentCodings.Gzip, noise));
        Assert.Null(Defaults.Compress(ContentCodings.Brotli, [1]));
    }

    private static byte[] Decode(Stream decoder)
    {
        using (decoder)
        {
            var output = new MemoryStream();
            decoder.CopyTo(output);
            return output.ToArray();
        }
    }
}
