using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Diagnosers;
using BenchmarkDotNet.Exporters;
using BenchmarkDotNet.Jobs;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Toolchains.InProcess.Emit;

namespace FastFiles.Benchmarks.Infrastructure;

internal enum RunLength
{
    Full,
    Quick,
    Dry,
}

internal static class BenchConfig
{
    /// <summary>
    /// BenchmarkDotNet 0.14 has no net10.0 moniker, so its default toolchain cannot generate and build a child
    /// project for this runtime. The in-process emit toolchain runs the benchmarks inside this (Release) process
    /// on the host runtime instead: no child build, same JIT and GC settings as the host. The price is no process
    /// isolation between cases, which the suites tolerate because each one sets up its own state.
    /// </summary>
    public static IConfig Create(RunLength length)
    {
        Job job = length switch
        {
            RunLength.Dry => Job.Dry.WithId("Dry"),
            RunLength.Quick => Job.ShortRun.WithId("Quick"),
            _ => Job.Default.WithId("InProcess"),
        };

        return ManualConfig.CreateEmpty()
            .AddJob(job.WithToolchain(InProcessEmitToolchain.Instance))
            .AddColumnProvider(DefaultColumnProviders.Instance)
            .AddLogger(BenchmarkDotNet.Loggers.ConsoleLogger.Default)
            .AddExporter(MarkdownExporter.GitHub)
            .AddDiagnoser(MemoryDiagnoser.Default)
            .WithSummaryStyle(SummaryStyle.Default.WithRatioStyle(RatioStyle.Trend))
            .WithOptions(ConfigOptions.DisableLogFile);
    }
}
