using BenchmarkDotNet.Running;
using FastFiles.Benchmarks.Infrastructure;

namespace FastFiles.Benchmarks;

public static class Program
{
    /// <summary>
    /// <c>--dry</c> (ours, removed before BenchmarkDotNet sees the rest) runs every case once for CI; all other
    /// arguments are BenchmarkDotNet's (<c>--filter</c>, <c>--list flat</c>, ...).
    /// </summary>
    public static int Main(string[] args)
    {
        bool dry = args.Contains("--dry", StringComparer.Ordinal);
        string[] rest = args.Where(a => a != "--dry").ToArray();
        var summaries = BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(rest, BenchConfig.Create(dry));
        // A validation error or a benchmark that threw leaves a summary with errors: fail so CI notices.
        return summaries.Any(s => s.HasCriticalValidationErrors || s.Reports.Any(r => !r.Success)) ? 1 : 0;
    }
}
