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

    [Fact]
    public void OpenHandle_reads_the_stamp_from_the_descriptor_and_leaves_it_blocking()
    {
        string path = Path.Combine(Path.GetTempPath(), $"fastfiles-unit-{Guid.NewGuid():N}.bin");
        File.WriteAllBytes(path, new byte[4321]);
        try
        {
            using Microsoft.Win32.SafeHandles.SafeFileHandle handle = FileVersion.OpenHandle(path, out FileStamp stamp);
            Assert.True(FileStamp.TryGet(path, out FileStamp looked));
            Assert.Equal(looked, stamp);
            Assert.Equal(4321, stamp.Length);
            Assert.False(stamp.IsDirectory);
            Assert.Equal(4321, RandomAccess.Read(handle, new byte[8192], 0));
            if (OperatingSystem.IsLinux())
            {
                // O_NONBLOCK (octal 04000) kept the open of a FIFO from waiting; a served file's descriptor must not keep it.
                string flags = File.ReadAllLines($"/proc/self/fdinfo/{handle.DangerousGetHandle()}").Single(l => l.StartsWith("flags:", StringComparison.Ordinal));
                long octal = Convert.ToInt64(flags["flags:".Length..].Trim(), 8);
                Assert.Equal(0, octal & 0x800);
                Assert.NotEqual(0, octal & 0x80000); // O_CLOEXEC
            }
        }
        finally
        {
            File.Delete(path);
        }
    }

    [Fact]
    public async Task OpenHandle_refuses_what_is_not_a_regular_file()
    {
        string dir = Path.Combine(Path.GetTempPath(), $"fastfiles-unit-{Guid.NewGuid():N}");
        Directory.CreateDirectory(dir);
        try
        {
            string file = Path.Combine(dir, "file.txt");
            File.WriteAllText(file, "x");
            Assert.Throws<FileNotFoundException>(() => FileVersion.OpenHandle(Path.Combine(dir, "missing.txt")));
            // A file used as a directory (ENOTDIR) and a name over NAME_MAX (ENAMETOOLONG): nothing to open.
            Assert.Throws<FileNotFoundException>(() => FileVersion.OpenHandle(Path.Combine(file, "below")));
            Assert.Throws<FileNotFoundException>(() => FileVersion.OpenHandle(Path.Combine(dir, new string('a', 300))));
            Assert.Throws<UnauthorizedAccessException>(() => FileVersion.OpenHandle(dir));

            string fifo = Path.Combine(dir, "pipe");
            using (var mkfifo = System.Diagnostics.Process.Start("mkfifo", fifo))
            {
                await mkfifo.WaitForExitAsync();
                Assert.Equal(0, mkfifo.ExitCode);
            }

            // Without a writer an open for reading would wait; the test bounds it so a regression fails instead of hanging.
            Exception? refused = await Task.Run(() => Record.Exception(() => FileVersion.OpenHandle(fifo).Dispose())).WaitAsync(TimeSpan.FromSeconds(30));
            Assert.IsType<FileNotFoundException>(refused);
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }
}
