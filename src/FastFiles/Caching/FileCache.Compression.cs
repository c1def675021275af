using System.Diagnostics;
using System.Threading.Channels;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Primitives;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Caching;

/// <summary>
/// Dynamic compression: brotli and gzip variants of compressible files without sidecars, made once per cached version,
/// off the request path, and kept in the entry within the cache's byte budget.
/// </summary>
/// <remarks>
/// A request whose Accept-Encoding prefers a coding not made yet queues its entry (once) and is answered with what
/// exists (identity, or a sidecar). One worker per cache compresses queued entries one at a time from the entry's own
/// bytes (the cached content, or the file read between two identical stamps), and publishes a variant only into the
/// entry it was made from, only while that entry is still the cached one: a file that changed meanwhile never gets a
/// variant of its old bytes, and its new version is compressed when it is next requested.
/// </remarks>
internal sealed partial class FileCache
{
    // Bounds the memory and the backlog after a deploy: a request that finds the queue full is served uncompressed and
    // a later one queues the entry again.
    private const int CompressionQueueCapacity = 256;

    private readonly CompressionPolicy? _compression;
    private readonly Channel<CachedFile>? _compressionQueue;

    /// <summary>
    /// The coding to send <paramref name="entry"/> in: the best of those it has that <paramref name="accept"/> allows
    /// (<see cref="ContentCodings.None"/> for identity). When the client would prefer a coding still to be made and asks
    /// for the whole body (<paramref name="wholeBody"/>: a GET without Range), the entry is queued for compression.
    /// </summary>
    /// <remarks>
    /// A HEAD or a range asks for little or nothing of the body, as nginx's gzip compresses neither: under a cache too
    /// small for a site's variants, each such request otherwise cost a whole-file compression (about 0.6 s of CPU for
    /// 6 MiB of JSON) whose variant could be evicted before anyone was sent it.
    /// </remarks>
    public ContentCodings Negotiate(CachedFile entry, in AcceptEncoding accept, bool wholeBody)
    {
        ContentCodings available = entry.Available;
        ContentCodings pending = entry.Pending;
        if (wholeBody && pending != ContentCodings.None && (accept.Select(available | pending) & pending) != ContentCodings.None)
        {
            Enqueue(entry);
        }

        return accept.Select(available);
    }

    /// <summary>
    /// The version of <paramref name="entry"/> to send for <paramref name="request"/>: the identity when the file has no
    /// variants to choose from (Accept-Encoding is then not read), else by <see cref="Negotiate"/>.
    /// </summary>
    public FileVersion Select(CachedFile entry, in FileRequest request)
        => entry.Available == ContentCodings.None && entry.Pending == ContentCodings.None
            ? entry.Identity
            : entry.Select(Negotiate(entry, request.AcceptEncoding(), request.IsGet && StringValues.IsNullOrEmpty(request.Headers.Range)));

    private void Enqueue(CachedFile entry)
    {
        if (!entry.TryMarkQueued())
        {
            return;
        }

        if (!_compressionQueue!.Writer.TryWrite(entry))
        {
            entry.UnmarkQueued();
            _metrics.Compressed(null, "queue_full");
            Log.CompressionQueueFull(_logger, entry.Settings.LogName);
        }
    }

    private Channel<CachedFile> StartCompressor()
    {
        Channel<CachedFile> queue = Channel.CreateBounded<CachedFile>(
            new BoundedChannelOptions(CompressionQueueCapacity) { SingleReader = true, FullMode = BoundedChannelFullMode.Wait });
        _ = Task.Run(() => CompressLoopAsync(queue.Reader));
        return queue;
    }

    private async Task CompressLoopAsync(ChannelReader<CachedFile> reader)
    {
        try
        {
            while (await reader.WaitToReadAsync(_stopping.Token).ConfigureAwait(false))
            {
                while (reader.TryRead(out CachedFile? entry))
                {
                    try
                    {
                        await CompressAsync(entry).ConfigureAwait(false);
                    }
                    catch (Exception ex) when (ex is not OperationCanceledException)
                    {
                        // One file's failure must not stop the worker; that version stays uncompressed.
                        foreach (ContentCoding coding in Sidecar.All)
                        {
                            entry.Settle(coding.Coding);
                        }

                        _metrics.Compressed(null, "failed");
                        Log.CompressionFailed(_logger, entry.Settings.LogName, ex);
                    }
                }
            }
        }
        catch (OperationCanceledException)
        {
            // The app is stopping.
        }
    }

    private async Task CompressAsync(CachedFile entry)
    {
        CompressionPolicy policy = _compression!;
        string name = entry.Settings.LogName;
        if (!IsCurrent(entry))
        {
            Discard(entry, entry.Pending, name, "stale");
            return;
        }

        FileVersion identity = entry.Identity;
        SafeFileHandle? file = null;
        try
        {
            byte[]? source = identity.Content;
            if (source is null)
            {
                // Larger than the content cache holds: read this version from disk, and only this version.
                file = FileVersion.OpenHandle(identity.PhysicalPath!);
                source = ReadVersion(file, identity.Stamp);
                if (source is null)
                {
                    Changed(entry, name);
                    return;
                }
            }

            foreach (ContentCoding row in Sidecar.All)
            {
                ContentCodings coding = row.Coding;
                if ((entry.Pending & coding) == 0)
                {
                    continue;
                }

                long started = Stopwatch.GetTimestamp();
                byte[]? encoded = policy.Compress(coding, source);
                if (policy.BeforePublish is { } hook)
                {
                    await hook(name, row.Token).ConfigureAwait(false);
                }

                // Bytes read from disk are this version's only if the file is still this version after they were used.
                if (file is not null && FileStamp.FromHandle(file) != identity.Stamp)
                {
                    Changed(entry, name);
                    return;
                }

                if (encoded is null)
                {
                    Discard(entry, coding, name, "not_smaller");
                    continue;
                }

                // One variant may take at most a quarter of the budget, so compressing a big file cannot empty the cache.
                if (encoded.Length > _options.FileCacheSizeLimit / 4)
                {
                    Discard(entry, coding, name, "over_budget");
                    continue;
                }

                FileVersion variant = identity.CompressedVariant(encoded, row.Token, _contentHashETags ? ContentHash.Of(encoded) : null);
                if (!TryPublish(entry, coding, variant))
                {
                    Discard(entry, entry.Pending, name, "stale");
                    return;
                }

                _metrics.Compressed(row.Token, "published");
                Log.VariantCompressed(_logger, name, row.Token, source.Length, encoded.Length, Stopwatch.GetElapsedTime(started).TotalMilliseconds);
            }
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            // Gone or unreadable since the entry was built: the next request looks again.
            Changed(entry, name);
        }
        finally
        {
            file?.Dispose();
        }
    }

    private bool IsCurrent(CachedFile entry) => _entries.TryGetValue(entry.Key, out CachedFile? current) && ReferenceEquals(current, entry);

    private bool TryPublish(CachedFile entry, ContentCodings coding, FileVersion variant)
    {
        lock (_writeLock)
        {
            // Only into the entry the bytes came from, and only while it is cached (its bytes then count in the budget).
            if (!IsCurrent(entry))
            {
                return false;
            }

            entry.Publish(coding, variant);
            _bytesHeld += variant.Content!.Length;
            if (_bytesHeld > _options.FileCacheSizeLimit)
            {
                EvictLocked();
            }
        }

        return true;
    }

    private void Changed(CachedFile entry, string name)
    {
        // The next request re-checks the file system, replaces the entry, and queues the new version.
        entry.MarkSuspect();
        Discard(entry, entry.Pending, name, "changed");
    }

    private void Discard(CachedFile entry, ContentCodings codings, string name, string outcome)
    {
        foreach (ContentCoding row in Sidecar.All)
        {
            if ((codings & row.Coding) != 0)
            {
                entry.Settle(row.Coding);
                _metrics.Compressed(row.Token, outcome);
                Log.VariantDiscarded(_logger, name, row.Token, outcome);
            }
        }
    }

    // The whole file if it is version <paramref name="stamp"/> when opened; null when it is not, or shrank while read.
    private static byte[]? ReadVersion(SafeFileHandle file, FileStamp stamp)
    {
        if (FileStamp.FromHandle(file) != stamp)
        {
            return null;
        }

        byte[] content = GC.AllocateUninitializedArray<byte>((int)stamp.Length);
        int total = 0;
        while (total < content.Length)
        {
            int read = RandomAccess.Read(file, content.AsSpan(total), total);
            if (read == 0)
            {
                return null;
            }

            total += read;
        }

        return content;
    }
}
