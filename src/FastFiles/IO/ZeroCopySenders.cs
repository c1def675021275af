namespace FastFiles.IO;

/// <summary>Whether any connection of this process has had an <see cref="IZeroCopyFileSender"/>.</summary>
internal static class ZeroCopySenders
{
    // Set once, never cleared: until a send path connection exists, a cached body from memory skips looking one up
    // (a feature lookup through the request's and the connection's collections on every small response).
    private static volatile bool s_any;

    public static bool AnyInProcess
    {
        get => s_any;
        set => s_any = value;
    }
}
