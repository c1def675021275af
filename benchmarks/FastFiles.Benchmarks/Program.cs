using BenchmarkDotNet.Running;
using FastFiles.Benchmarks.Infrastructure;

namespace FastFiles.Benchmarks;

public static class Program
{
    /// <summary>
    /// <c>--dry</c> runs every case once (CI: proves the suites still run, measures nothing); <c>--quick</c> is a
    /// short run (3 warm-up and 3 measured iterations) for a first look. Both are ours and removed before
    /// BenchmarkDotNet sees the rest (<c>--filter</c>, <c>--list flat</c>, ...).
    /// </summary>
    public static int Main(string[] args)
    {
        RunLength length = args.Contains("--dry", StringComparer.Ordinal) ? RunLength.Dry
            : args.Contains("--quick", StringComparer.Ordinal) ? RunLength.Quick
            : RunLength.Full;
        string[] rest = args.Where(a => a is not "--dry" and not "--quick").ToArray();
        var summaries = BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(rest, BenchConfig.Create(length));
        // A validation error or a benchmark that threw leaves a summary with errors: fail so CI notices.
        return summaries.Any(s => s.HasCriticalValidationErrors || s.Reports.Any(r => !r.Success)) ? 1 : 0;
    }
}
