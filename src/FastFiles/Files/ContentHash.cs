using System.Buffers;
using System.Buffers.Text;
using System.Security.Cryptography;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Files;

/// <summary>
/// The content-hash entity tag of one file version: <c>"</c> + the first 128 bits of the SHA-256 of its bytes in
/// base64url + <c>"</c> (24 characters), so every server holding the same bytes sends the same tag whatever the
/// files' modification times. SHA-256 rather than a faster non-cryptographic hash: it is in the base library
/// (System.IO.Hashing is not available to this build), hardware-accelerated, and any tool can compute the same tag
/// (<c>openssl dgst -sha256 -binary | head -c 16 | basenc --base64url</c>, padding removed).
/// </summary>
/// <remarks>
/// Computed once per version: from the cached bytes when the file is small, otherwise by reading the file off the
/// request path, between two identical stamps (a version that changed while it was read gets no tag at all, never a
/// tag of mixed bytes). Until it is known, <see cref="ETag"/> is <see langword="null"/>: responses then carry no
/// ETag (Last-Modified still validates), and a request with an entity-tag condition waits for it (<see cref="WhenReady"/>),
/// so a tag is never compared against anything but the real one and one version never has two tags.
/// </remarks>
internal sealed class ContentHash
{
    private const int HashedBits = 128;
    private const int ReadSize = 256 * 1024;
    private const long StampCheckInterval = 256L * ReadSize;

    private readonly string? _path;
    private readonly FileStamp _stamp;
    private readonly SemaphoreSlim? _gate;
    private readonly SemaphoreSlim? _neededGate;
    private readonly CancellationToken _stopping;
    private readonly Action? _changed;
    private string? _etag;
    private Task? _running;

    // Set when a request waits for this tag: its computation then starts at once, not behind other files' in the gate.
    private TaskCompletionSource? _needed;

    private ContentHash(string etag)
    {
        _etag = etag;
        _running = Task.CompletedTask;
    }

    private ContentHash(string path, FileStamp stamp, SemaphoreSlim? gate, SemaphoreSlim? neededGate, Action? changed, CancellationToken stopping)
    {
        _path = path;
        _stamp = stamp;
        _gate = gate;
        _neededGate = neededGate;
        _changed = changed;
        _stopping = stopping;
    }

    /// <summary>The quoted entity tag, or <see langword="null"/> while it is not known (or the version changed while read).</summary>
    public string? ETag => Volatile.Read(ref _etag);

    /// <summary>The tag of bytes already in memory.</summary>
    public static ContentHash Of(ReadOnlySpan<byte> content)
    {
        Span<byte> digest = stackalloc byte[SHA256.HashSizeInBytes];
        SHA256.HashData(content, digest);
        return new ContentHash(Format(digest));
    }

    /// <summary>
    /// The tag of the file at <paramref name="path"/> as of <paramref name="stamp"/>, computed on the thread pool when
    /// <see cref="Start"/> or <see cref="WhenReady"/> is first called, one file at a time per <paramref name="gate"/>.
    /// <paramref name="changed"/> runs when the file turned out not to be that version any more. A hash started early
    /// for a waiting request (see <see cref="WhenNeededAsync"/>) does not wait for <paramref name="gate"/> but for a
    /// turn of <paramref name="neededGate"/>, when given.
    /// </summary>
    public static ContentHash ForFile(string path, FileStamp stamp, SemaphoreSlim? gate, SemaphoreSlim? neededGate, Action? changed, CancellationToken stopping)
        => new(path, stamp, gate, neededGate, changed, stopping);

    /// <summary>Whether the computation has ended without a tag (the file changed while read, or could not be read).</summary>
    public bool Failed => Volatile.Read(ref _running) is { IsCompleted: true } && ETag is null;

    /// <summary>Starts computing the tag in the background if nobody has yet.</summary>
    public void Start() => _ = WhenReady();

    /// <summary>Completes (never faults) once <see cref="ETag"/> is final.</summary>
    public Task WhenReady()
    {
        Task? running = Volatile.Read(ref _running);
        if (running is not null)
        {
            return running;
        }

        var created = new Task<Task>(ComputeAsync);
        running = Interlocked.CompareExchange(ref _running, created.Unwrap(), null);
        if (running is not null)
        {
            return running;
        }

        created.Start(TaskScheduler.Default);
        return _running!;
    }

    /// <summary>
    /// Completes once <see cref="ETag"/> is final, for a request that waits for it: the computation starts now if it
    /// is still queued behind other files' (the root's gate runs background hashes one at a time, so a request would
    /// otherwise wait for hashes of unrelated files, each as long as its file). Throws when
    /// <paramref name="cancellationToken"/> (the request's abort) is cancelled first; the computation goes on.
    /// </summary>
    public Task WhenNeededAsync(CancellationToken cancellationToken)
    {
        Task running = WhenReady();
        if (running.IsCompleted)
        {
            return running;
        }

        if (_gate is not null)
        {
            Needed().TrySetResult();
        }

        return running.WaitAsync(cancellationToken);
    }

    /// <summary>
    /// <see cref="WhenNeededAsync"/> for a request: false, instead of an exception, when the client left first
    /// (<paramref name="requestAborted"/>); there is then nothing to answer.
    /// </summary>
    public async Task<bool> WhenNeededByAsync(CancellationToken requestAborted)
    {
        try
        {
            await WhenNeededAsync(requestAborted);
            return true;
        }
        catch (OperationCanceledException) when (requestAborted.IsCancellationRequested)
        {
            return false;
        }
    }

    // The signal that a request waits, made by whichever side (a waiting request, the computation) comes first.
    private TaskCompletionSource Needed()
        => Volatile.Read(ref _needed)
            ?? Interlocked.CompareExchange(ref _needed, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously), null)
            ?? _needed!;

    /// <summary>Formats a SHA-256 digest as a quoted entity tag.</summary>
    internal static string Format(ReadOnlySpan<byte> sha256)
        => string.Concat("\"", Base64Url.EncodeToString(sha256[..(HashedBits / 8)]), "\"");

    /// <summary>Hashes the file if it is still <paramref name="stamp"/> from start to end; null otherwise.</summary>
    internal static string? Compute(SafeFileHandle file, FileStamp stamp, CancellationToken cancellationToken)
    {
        if (FileStamp.FromHandle(file) != stamp)
        {
            return null;
        }

        using var sha = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        byte[] buffer = ArrayPool<byte>.Shared.Rent(ReadSize);
        try
        {
            long offset = 0;
            while (offset < stamp.Length)
            {
                cancellationToken.ThrowIfCancellationRequested();

                // Every 64 MiB: a file deleted or replaced by rename (its inode's change time moves as its last link goes)
                // or written to is no longer the version, so its tag will not be kept: stop reading it (a large file would
                // otherwise be read to its end, its disk space held, for nothing).
                if (offset > 0 && offset % StampCheckInterval == 0 && FileStamp.FromHandle(file) != stamp)
                {
                    return null;
                }

                int read = RandomAccess.Read(file, buffer.AsSpan(0, (int)Math.Min(ReadSize, stamp.Length - offset)), offset);
                if (read == 0)
                {
                    return null;
                }

                sha.AppendData(buffer, 0, read);
                offset += read;
            }
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }

        if (FileStamp.FromHandle(file) != stamp)
        {
            return null;
        }

        Span<byte> digest = stackalloc byte[SHA256.HashSizeInBytes];
        sha.GetHashAndReset(digest);
        return Format(digest);
    }

    private async Task ComputeAsync()
    {
        bool entered = false;
        SemaphoreSlim? neededEntered = null;
        try
        {
            if (_gate is not null)
            {
                Task turn = _gate.WaitAsync(_stopping);
                if (await Task.WhenAny(turn, Needed().Task).ConfigureAwait(false) == turn)
                {
                    await turn.ConfigureAwait(false);
                    entered = true;
                }
                else
                {
                    // A request waits for this tag: hash it now, among at most a few such, and give back the turn when
                    // it comes.
                    _ = turn.ContinueWith(static (t, gate) => ((SemaphoreSlim)gate!).Release(), _gate, CancellationToken.None, TaskContinuationOptions.OnlyOnRanToCompletion, TaskScheduler.Default);
                    if (_neededGate is not null)
                    {
                        await _neededGate.WaitAsync(_stopping).ConfigureAwait(false);
                        neededEntered = _neededGate;
                    }
                }
            }

            string? etag;
            using (SafeFileHandle file = FileVersion.OpenHandle(_path!))
            {
                etag = Compute(file, _stamp, _stopping);
            }

            Volatile.Write(ref _etag, etag);
            if (etag is null)
            {
                _changed?.Invoke();
            }
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or OperationCanceledException)
        {
            // Gone, unreadable, or the app is stopping: this version keeps no tag, and a changed file gets a new version.
            if (ex is not OperationCanceledException)
            {
                _changed?.Invoke();
            }
        }
        finally
        {
            if (entered)
            {
                _gate!.Release();
            }

            neededEntered?.Release();
        }
    }
}
