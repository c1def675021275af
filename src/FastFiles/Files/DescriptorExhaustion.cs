using System.Runtime.InteropServices;

namespace FastFiles.Files;

/// <summary>
/// The process (EMFILE) or the system (ENFILE) is out of file descriptors: a temporary server condition, not a missing
/// file. Lookups let it propagate instead of reporting "not found" (callers answer 503, never a cacheable 404).
/// </summary>
internal static partial class DescriptorExhaustion
{
    private const int RlimitNofile = 7;
    private static long s_limit;
    private static long s_limitReadAt = long.MinValue / 2;

    // Linux, macOS and the BSDs report errno in IOException.HResult; Windows reports ERROR_TOO_MANY_OPEN_FILES as an HRESULT.
    private const int Emfile = 24;
    private const int Enfile = 23;
    private const int WindowsTooManyOpenFiles = unchecked((int)0x80070004);

    public static bool Is(Exception ex) => ex is IOException { HResult: var code }
        && (OperatingSystem.IsWindows() ? code == WindowsTooManyOpenFiles : code is Emfile or Enfile);

    /// <summary>
    /// The process's descriptor limit (RLIMIT_NOFILE, soft), read at most once a second; 0 where it cannot be read
    /// (not Linux or not 64-bit: the struct is two 64-bit counts there).
    /// </summary>
    public static long ProcessLimit()
    {
        if (!OperatingSystem.IsLinux() || IntPtr.Size != 8)
        {
            return 0;
        }

        long now = Environment.TickCount64;
        if (now - Volatile.Read(ref s_limitReadAt) >= 1000)
        {
            long limit = 0;
            try
            {
                if (GetResourceLimit(RlimitNofile, out ResourceLimit value) == 0)
                {
                    limit = (long)Math.Min(value.Current, long.MaxValue);
                }
            }
            catch (EntryPointNotFoundException)
            {
                // No getrlimit: unknown.
            }

            Volatile.Write(ref s_limit, limit);
            Volatile.Write(ref s_limitReadAt, now);
        }

        return Volatile.Read(ref s_limit);
    }

    [StructLayout(LayoutKind.Sequential)]
    private struct ResourceLimit
    {
        public ulong Current;
        public ulong Maximum;
    }

    [LibraryImport("libc", EntryPoint = "getrlimit")]
    private static partial int GetResourceLimit(int resource, out ResourceLimit limit);
}
