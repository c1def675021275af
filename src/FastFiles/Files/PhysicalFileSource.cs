using System.Runtime.InteropServices;
using System.Text;
using Microsoft.Win32.SafeHandles;

namespace FastFiles.Files;

/// <summary>
/// Files under a directory on disk. Paths are built by concatenating the root and the checked sub-path (never
/// <see cref="Path.Combine(string, string)"/>, which would let a rooted sub-path escape), and unless allowed, a
/// file whose real location is outside the root (reached through a symbolic link) is treated as missing.
/// </summary>
internal sealed partial class PhysicalFileSource : FileSource
{
    private readonly string _root;

    // The root as paths are built from it: without a trailing separator, so that a file system root ("/", "D:\"),
    // which keeps its separator, does not give "//a.txt".
    private readonly string _mapRoot;
    // The root's real location; re-read when a path falls outside it, since the root may itself be a symbolic link
    // swapped to a new directory (an atomic "current -> releases/N" deploy).
    private volatile string _realRootWithSeparator;
    private readonly bool _followLinksOutsideRoot;

    public PhysicalFileSource(string root, bool followLinksOutsideRoot)
    {
        _root = Path.TrimEndingDirectorySeparator(Path.GetFullPath(root));
        _mapRoot = Path.EndsInDirectorySeparator(_root) ? _root[..^1] : _root;
        _followLinksOutsideRoot = followLinksOutsideRoot;
        _realRootWithSeparator = RealRootWithSeparator();
    }

    // A file system root ("/") keeps its separator when trimmed: "//" would match no path, and every file was a 404.
    private string RealRootWithSeparator()
    {
        string real = Path.TrimEndingDirectorySeparator(RealPath(_root));
        return Path.EndsInDirectorySeparator(real) ? real : real + Path.DirectorySeparatorChar;
    }

    // Under the root's real location as last read, or as it is now (the root link was swapped since).
    private bool UnderRealRoot(string real)
    {
        // One read of the field: another request may re-read the root meanwhile, and comparing the new location with a
        // second read would find them equal and refuse a path under it.
        string known = _realRootWithSeparator;
        if (real.StartsWith(known, StringComparison.Ordinal))
        {
            return true;
        }

        string now = RealRootWithSeparator();
        if (!string.Equals(now, known, StringComparison.Ordinal))
        {
            _realRootWithSeparator = now;
        }

        return real.StartsWith(now, StringComparison.Ordinal);
    }

    public string Root => _root;

    /// <summary>The root without a trailing separator ("" for "/"): request paths, which start with "/", follow it.</summary>
    public string MapRoot => _mapRoot;

    public string MapPath(string subpath)
        => Path.DirectorySeparatorChar == '/' ? string.Concat(_mapRoot, subpath) : string.Concat(_mapRoot, subpath.Replace('/', Path.DirectorySeparatorChar));

    public override LookupResult TryOpen(string subpath, string? contentEncoding, out FileVersion? version)
    {
        version = null;
        string path = MapPath(subpath);
        // The root's real location as known before the open: a swap of the root link between the open and the check
        // (another request may have re-read the root meanwhile) must not turn a file opened in the release the link
        // named then into a 404.
        string rootBefore = _realRootWithSeparator;
        try
        {
            version = FileVersion.Open(path, contentEncoding);
        }
        catch (UnauthorizedAccessException)
        {
            // .NET refuses to open directories as files; anything else unreadable is not ours to serve.
            return Directory.Exists(path) && IsInsideRoot(path) ? LookupResult.Directory : LookupResult.NotFound;
        }
        catch (IOException ex) when (!DescriptorExhaustion.Is(ex))
        {
            // Missing, a path through a file, too long, or deleted between lookup and open: all 404. Running out of
            // descriptors propagates: the file may exist, and the caller answers 503.
            return LookupResult.NotFound;
        }

        if (!_followLinksOutsideRoot && !IsInsideRoot(version.Handle!, path, rootBefore))
        {
            version.Dispose();
            version = null;
            return LookupResult.NotFound;
        }

        return LookupResult.File;
    }

    public override bool FileExists(string subpath) => File.Exists(MapPath(subpath));

    public override bool DirectoryExists(string subpath) => Directory.Exists(MapPath(subpath));

    private bool IsInsideRoot(string path)
    {
        try
        {
            return _followLinksOutsideRoot || UnderRealRoot(RealPath(path) + Path.DirectorySeparatorChar);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            // A link that cannot be resolved (the portable path: a broken junction, a protected reparse point): not
            // known to be inside, so not served (404, never a 500).
            return false;
        }
    }

    private bool IsInsideRoot(SafeFileHandle handle, string path, string rootBefore)
    {
        try
        {
            // On Linux the kernel tells us where the open descriptor really points, with no window between check
            // and use; elsewhere resolve the path.
            string real = OperatingSystem.IsLinux() ? DescriptorPath(handle) ?? RealPath(path) : RealPath(path);
            return real.StartsWith(rootBefore, StringComparison.Ordinal) || UnderRealRoot(real);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            return false;
        }
    }

    private static unsafe string? DescriptorPath(SafeFileHandle handle)
    {
        bool added = false;
        try
        {
            handle.DangerousAddRef(ref added);
            int fd = (int)handle.DangerousGetHandle();
            byte* link = stackalloc byte[32];
            int linkLength = Encoding.ASCII.GetBytes($"/proc/self/fd/{fd}", new Span<byte>(link, 31));
            link[linkLength] = 0;
            const int Max = 4096;
            byte* buffer = stackalloc byte[Max];
            nint n = ReadLink(link, buffer, Max);
            return n <= 0 || n >= Max ? null : Encoding.UTF8.GetString(buffer, (int)n);
        }
        finally
        {
            if (added)
            {
                handle.DangerousRelease();
            }
        }
    }

    /// <summary>The canonical path with every symbolic link resolved; the input when it cannot be resolved.</summary>
    internal static string RealPath(string path)
    {
        if (OperatingSystem.IsLinux() || OperatingSystem.IsMacOS() || OperatingSystem.IsFreeBSD())
        {
            string? real = NativeRealPath(path);
            if (real is not null)
            {
                return real;
            }
        }

        // Portable fallback: resolve each existing component's link target.
        string full = Path.GetFullPath(path);
        string? root = Path.GetPathRoot(full);
        string current = root ?? string.Empty;
        foreach (string part in full[current.Length..].Split(Path.DirectorySeparatorChar, StringSplitOptions.RemoveEmptyEntries))
        {
            current = Path.Combine(current, part);
            FileSystemInfo info = new FileInfo(current);
            if (!info.Exists)
            {
                info = new DirectoryInfo(current);
            }

            if (info.LinkTarget is not null)
            {
                current = info.ResolveLinkTarget(returnFinalTarget: true)?.FullName ?? current;
            }
        }

        return current;
    }

    private static unsafe string? NativeRealPath(string path)
    {
        const int Max = 4096;
        byte[] resolved = new byte[Max];
        fixed (byte* output = resolved)
        {
            nint result = RealPathNative(path, output);
            if (result == 0)
            {
                return null;
            }

            int length = Array.IndexOf(resolved, (byte)0);
            return Encoding.UTF8.GetString(resolved, 0, length < 0 ? Max : length);
        }
    }

    [LibraryImport("libc", EntryPoint = "readlink", SetLastError = true)]
    private static unsafe partial nint ReadLink(byte* path, byte* buffer, nint size);

    [LibraryImport("libc", EntryPoint = "realpath", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    private static unsafe partial nint RealPathNative(string path, byte* resolved);
}
