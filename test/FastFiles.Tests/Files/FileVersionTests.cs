using FastFiles.Files;

namespace FastFiles.Tests.Files;

public sealed class FileVersionTests
{
    [Theory]
    [InlineData(0L, 0L, null, "\"0-0\"")]
    [InlineData(637_134_000_001_234_567L, 10_000L, null, "\"8d78dff5065b687-2710\"")]
    [InlineData(637_134_000_001_234_567L, 10_000L, "br", "\"8d78dff5065b687-2710-br\"")]
    [InlineData(1L, 1L, "gzip", "\"1-1-gzip\"")]
    public void ETag_is_ticks_and_length_in_hex(long ticks, long length, string? coding, string expected)
        => Assert.Equal(expected, FileVersion.FormatETag(ticks, length, coding));

    [Fact]
    public void Open_reads_validators_from_the_file_and_truncates_last_modified_to_seconds()
    {
        string path = Path.Combine(Path.GetTempPath(), $"fastfiles-unit-{Guid.NewGuid():N}.txt");
        File.WriteAllBytes(path, new byte[123]);
        var modified = new DateTime(2020, 1, 2, 3, 4, 5, DateTimeKind.Utc).AddTicks(9_999_999);
        File.SetLastWriteTimeUtc(path, modified);
        try
        {
            using FileVersion version = FileVersion.Open(path, contentEncoding: null);
            Assert.Equal(123, version.Length);
            Assert.Equal(new DateTimeOffset(2020, 1, 2, 3, 4, 5, TimeSpan.Zero), version.LastModified);
            Assert.Equal("Thu, 02 Jan 2020 03:04:05 GMT", version.LastModifiedHeader);
            Assert.Equal(FileVersion.FormatETag(modified.Ticks, 123, null), version.ETag);
            Assert.Null(version.ContentEncoding);
            Assert.NotNull(version.Handle);
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public void Open_of_a_missing_file_throws_io_exception()
        => Assert.ThrowsAny<IOException>(() => FileVersion.Open(Path.Combine(Path.GetTempPath(), $"missing-{Guid.NewGuid():N}"), null));
}
