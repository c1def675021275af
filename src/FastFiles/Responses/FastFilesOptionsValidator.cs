using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.Options;

namespace FastFiles.Responses;

/// <summary>
/// Refuses <see cref="FastFilesOptions"/> values that could only fail later, per request (a cache size no array can
/// hold, a compression level zlib refuses), or that have no meaning (negative sizes, counts and intervals), so the host
/// stops at start with the option named instead. <see cref="FastFilesOptions.BufferSize"/> is not checked: it is
/// documented as clamped to 1 KiB to 64 KiB.
/// </summary>
internal sealed class FastFilesOptionsValidator : IValidateOptions<FastFilesOptions>
{
    public ValidateOptionsResult Validate(string? name, FastFilesOptions options)
    {
        var failures = new List<string>();
        void NotNegative(long value, string option)
        {
            if (value < 0)
            {
                failures.Add($"FastFiles:{option} must not be negative (it is {value}).");
            }
        }

        NotNegative(options.SynchronousReadThreshold, nameof(options.SynchronousReadThreshold));
        NotNegative(options.MaxCachedFileSize, nameof(options.MaxCachedFileSize));
        NotNegative(options.FileCacheSizeLimit, nameof(options.FileCacheSizeLimit));
        NotNegative(options.MaxCachedFiles, nameof(options.MaxCachedFiles));
        NotNegative(options.MaxOpenFiles, nameof(options.MaxOpenFiles));
        NotNegative(options.MaxRanges, nameof(options.MaxRanges));
        if (options.FileCacheRevalidationInterval < TimeSpan.Zero)
        {
            failures.Add($"FastFiles:{nameof(options.FileCacheRevalidationInterval)} must not be negative (it is {options.FileCacheRevalidationInterval}).");
        }

        // A cached body is one array, and the cache holds none larger than its whole budget: a larger
        // MaxCachedFileSize alone (long.MaxValue for "any size") is fine while the budget bounds it.
        if (options.LargestCachedBody > Array.MaxLength)
        {
            failures.Add($"FastFiles:{nameof(options.MaxCachedFileSize)} or FastFiles:{nameof(options.FileCacheSizeLimit)} must be at most {Array.MaxLength} bytes, the longest array .NET allows (they are {options.MaxCachedFileSize} and {options.FileCacheSizeLimit}).");
        }

        if (options.BrotliCompressionQuality is < 0 or > 11)
        {
            failures.Add($"FastFiles:{nameof(options.BrotliCompressionQuality)} must be 0 to 11 (it is {options.BrotliCompressionQuality}).");
        }

        if (options.GzipCompressionLevel is < 1 or > 9)
        {
            failures.Add($"FastFiles:{nameof(options.GzipCompressionLevel)} must be 1 to 9 (it is {options.GzipCompressionLevel}).");
        }

        return failures.Count == 0 ? ValidateOptionsResult.Success : ValidateOptionsResult.Fail(failures);
    }
}
