using System.Security.Cryptography;
using FastFiles.Files;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Tests.Files;

// One at a time with the other suite that hashes files: both use the process's table of known hashes, which a test
// here fills past its bound (forgetting what is done).
[Collection("Known content hashes")]
public sealed class ContentHashTests : IDisposable
{
    private readonly string _path = Path.Combine(Path.GetTempPath(), $"fastfiles-hash-{Guid.NewGuid():N}.bin");

    public void Dispose() => File.Delete(_path);

    [Fact]
    public void Tag_is_the_first_128_bits_of_sha256_in_base64url_quoted()
    {
        byte[] bytes = "hello"u8.ToArray();
        // printf hello | openssl dgst -sha256 -binary | head -c 16 | basenc --base64url (padding removed)
        Assert.Equal("\"LPJNul-wow4m6Dsqxbning\"", ContentHash.Of(bytes).ETag);
        Assert.Equal(ContentHash.Format(SHA256.HashData(bytes)), ContentHash.Of(bytes).ETag);
    }

    [Fact]
    public void A_file_hashed_from_disk_gets_the_same_tag_as_its_bytes()
    {
        byte[] bytes = new byte[700_000];
        new Random(7).NextBytes(bytes);
        File.WriteAllBytes(_path, bytes);
        using SafeFileHandle handle = FileVersion.OpenHandle(_path);
        Assert.Equal(ContentHash.Of(bytes).ETag, ContentHash.Compute(handle, FileStamp.FromHandle(handle), CancellationToken.None));
    }

    // A large file deleted while it is hashed stops being read: its tag would not be kept, and the read would hold the
    // file's space until the end (1 TiB of holes: minutes to hash, well beyond the bound below).
    [Fact]
    public async Task A_file_deleted_while_it_is_hashed_is_not_read_to_its_end()
    {
        using (FileStream huge = File.Create(_path))
        {
            huge.SetLength(1L << 40);
        }

        using SafeFileHandle handle = FileVersion.OpenHandle(_path);
        FileStamp stamp = FileStamp.FromHandle(handle);
        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        Task<string?> hashing = Task.Run(() => ContentHash.Compute(handle, stamp, bound.Token));
        await Task.Delay(300);
        File.Delete(_path);
        Assert.Null(await hashing);
        Assert.False(bound.IsCancellationRequested);
    }

    [Fact]
    public void A_file_that_is_no_longer_the_version_gets_no_tag()
    {
        File.WriteAllBytes(_path, new byte[100_000]);
        using SafeFileHandle handle = FileVersion.OpenHandle(_path);
        FileStamp before = FileStamp.FromHandle(handle);
        DateTime modified = File.GetLastWriteTimeUtc(_path);
        do
        {
            // Same size, new bytes, on a later file-system clock tick: the stamp the hash was asked for is gone.
            using FileStream stream = new(_path, FileMode.Open, FileAccess.Write, FileShare.ReadWrite);
            stream.Write(new byte[] { 1, 2, 3 });
        }
        while (File.GetLastWriteTimeUtc(_path) == modified && Thread.Yield());

        Assert.Null(ContentHash.Compute(handle, before, CancellationToken.None));
    }

    [Fact]
    public async Task A_background_hash_reports_a_change_and_never_a_tag_of_other_bytes()
    {
        File.WriteAllBytes(_path, new byte[100_000]);
        FileStamp stamp = StampOf(_path);

        // Replaced by rename before the hash ran: another inode, so not the version asked for.
        string next = _path + ".next";
        File.WriteAllBytes(next, new byte[100_000]);
        File.Move(next, _path, overwrite: true);
        bool changed = false;
        ContentHash hash = ContentHash.ForFile(_path, stamp, null, null, () => changed = true, CancellationToken.None);
        await hash.WhenReady();
        Assert.Null(hash.ETag);
        Assert.True(changed);
    }

    private FileStamp Write(byte[] bytes)
    {
        File.WriteAllBytes(_path, bytes);
        return StampOf(_path);
    }

    /// <summary>The stamp of the file at <paramref name="path"/> now.</summary>
    internal static FileStamp StampOf(string path)
    {
        using SafeFileHandle handle = FileVersion.OpenHandle(path);
        return FileStamp.FromHandle(handle);
    }

    [Fact]
    public async Task Requests_without_a_cache_entry_share_one_hash_per_version_and_keep_it_once_done()
    {
        byte[] bytes = new byte[300_000];
        new Random(11).NextBytes(bytes);
        FileStamp stamp = Write(bytes);

        ContentHash first = ContentHash.ForRequests(_path, stamp);
        Assert.Same(first, ContentHash.ForRequests(_path, stamp));
        Assert.True(await first.WhenNeededByAsync(CancellationToken.None));
        Assert.Equal(ContentHash.Of(bytes).ETag, first.ETag);

        // Done, and still the file's version: later requests are given the tag, with nothing to read.
        ContentHash later = ContentHash.ForRequests(_path, stamp);
        Assert.Same(first, later);
        Assert.Equal(first.ETag, later.ETag);

        // Written again with other bytes of the same length and its old modification time: another stamp (the change
        // time moved), another hash.
        DateTime modified = File.GetLastWriteTimeUtc(_path);
        bytes[0] ^= 0xFF;
        File.WriteAllBytes(_path, bytes);
        File.SetLastWriteTimeUtc(_path, modified);
        FileStamp next = StampOf(_path);

        Assert.NotEqual(stamp, next);
        ContentHash changed = ContentHash.ForRequests(_path, next);
        Assert.NotSame(first, changed);
        Assert.True(await changed.WhenNeededByAsync(CancellationToken.None));
        Assert.Equal(ContentHash.Of(bytes).ETag, changed.ETag);
        Assert.True(ContentHash.IsKnown(_path, changed));
    }

    [Fact]
    public async Task A_hash_only_requests_wait_for_ends_when_the_last_of_them_leaves()
    {
        using (FileStream huge = File.Create(_path))
        {
            // Sparse: minutes to hash.
            huge.SetLength(1L << 40);
        }

        FileStamp stamp = StampOf(_path);

        ContentHash hash = ContentHash.ForRequests(_path, stamp);
        using var firstLeaves = new CancellationTokenSource();
        using var secondLeaves = new CancellationTokenSource();
        Task<bool> first = hash.WhenNeededByAsync(firstLeaves.Token);
        Task<bool> second = hash.WhenNeededByAsync(secondLeaves.Token);

        // One leaves: the other still waits, and the hash goes on for it.
        firstLeaves.Cancel();
        Assert.False(await first);
        Assert.False(second.IsCompleted);
        Assert.Same(hash, ContentHash.ForRequests(_path, stamp));

        // The last leaves: the hash stops without a tag, is forgotten, and the next request starts another.
        secondLeaves.Cancel();
        Assert.False(await second);
        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        await hash.WhenReady().WaitAsync(bound.Token);
        Assert.Null(hash.ETag);
        Assert.False(ContentHash.IsKnown(_path, hash));
        ContentHash again = ContentHash.ForRequests(_path, stamp);
        Assert.NotSame(hash, again);
        Assert.True(ContentHash.IsKnown(_path, again));
    }

    // A request given the shared hash just before the last waiting one left (ForRequests, then a condition to wait for)
    // waits for a hash that was stopped for nobody: the version did not change, so its condition must still be
    // compared with the real tag (an If-Match answered 412, an If-None-Match 200 without a tag, otherwise).
    [Fact]
    public async Task A_request_that_joins_as_the_last_waiter_leaves_still_gets_the_tag()
    {
        // Sparse: long enough to hash (a few hundred ms) that the first request leaves while it runs.
        const long Length = 256L * 1024 * 1024;
        using (FileStream file = File.Create(_path))
        {
            file.SetLength(Length);
        }

        FileStamp stamp = StampOf(_path);

        ContentHash hash = ContentHash.ForRequests(_path, stamp);
        using var firstLeaves = new CancellationTokenSource();
        Task<bool> first = hash.WhenNeededByAsync(firstLeaves.Token);
        ContentHash joined = ContentHash.ForRequests(_path, stamp);
        Assert.Same(hash, joined);

        firstLeaves.Cancel();
        Assert.False(await first);
        using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        Assert.True(await joined.WhenNeededByAsync(bound.Token));
        Assert.Equal(ZerosTag(Length), joined.ETag);
    }

    internal static string ZerosTag(long length)
    {
        using var sha = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        byte[] zeros = new byte[1024 * 1024];
        for (long done = 0; done < length; done += zeros.Length)
        {
            sha.AppendData(zeros, 0, (int)Math.Min(zeros.Length, length - done));
        }

        return ContentHash.Format(sha.GetHashAndReset());
    }

    [Fact]
    public void Past_the_bound_versions_not_being_hashed_are_forgotten()
    {
        string prefix = _path + ".none/";
        FileStamp stamp = FileStamp.FromTicks(1, DateTime.UtcNow.Ticks);
        ContentHash oldest = ContentHash.ForRequests(prefix + "0", stamp);
        for (int i = 1; i <= ContentHash.MaxKnown; i++)
        {
            _ = ContentHash.ForRequests(prefix + i, stamp);
        }

        Assert.False(ContentHash.IsKnown(prefix + "0", oldest));
        ContentHash newest = ContentHash.ForRequests(prefix + "new", stamp);
        Assert.True(ContentHash.IsKnown(prefix + "new", newest));
    }
}
