namespace FastFiles.IO;

/// <summary>How a file body copy ended.</summary>
internal enum FileSendStatus
{
    /// <summary>Every requested byte was written and flushed.</summary>
    Completed,

    /// <summary>The client went away (flush completed or canceled, connection reset).</summary>
    ClientDisconnected,

    /// <summary>The file ended before the requested count: it was truncated underneath us.</summary>
    Truncated,

    /// <summary>
    /// The file's length or modification time changed after the headers were built (a rewrite in place): the last bytes
    /// were held back, so the caller aborts rather than let a body mixing two versions look complete.
    /// </summary>
    Changed,
}
