namespace FastFiles.Files;

/// <summary>
/// The process (EMFILE) or the system (ENFILE) is out of file descriptors: a temporary server condition, not a missing
/// file. Lookups let it propagate instead of reporting "not found" (callers answer 503, never a cacheable 404).
/// </summary>
internal static class DescriptorExhaustion
{
    // Linux, macOS and the BSDs report errno in IOException.HResult; Windows reports ERROR_TOO_MANY_OPEN_FILES as an HRESULT.
    private const int Emfile = 24;
    private const int Enfile = 23;
    private const int WindowsTooManyOpenFiles = unchecked((int)0x80070004);

    public static bool Is(Exception ex) => ex is IOException { HResult: var code }
        && (OperatingSystem.IsWindows() ? code == WindowsTooManyOpenFiles : code is Emfile or Enfile);
}
