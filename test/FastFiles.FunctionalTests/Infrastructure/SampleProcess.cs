using System.Collections.Concurrent;
using System.Diagnostics;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>
/// The sample app as shipped (samples/FastFiles.Sample), run as its own process on ephemeral loopback ports, optionally
/// under <c>prlimit</c> (a lower descriptor limit). Its console output is kept for assertions.
/// </summary>
public sealed class SampleProcess : IAsyncDisposable
{
    private readonly Process _process;

    private SampleProcess(Process process, Uri http, Uri https, ConcurrentQueue<string> output)
    {
        _process = process;
        Output = output;
        Http = http;
        Https = https;
    }

    public Uri Http { get; }

    public Uri Https { get; }

    public int ProcessId => _process.Id;

    public bool IsRunning => !_process.HasExited;

    /// <summary>The exit code, once the process has exited.</summary>
    public int ExitCode => _process.ExitCode;

    public ConcurrentQueue<string> Output { get; }

    /// <summary>The sample's build output, beside this test assembly's (same configuration and framework).</summary>
    public static string SampleDll
    {
        get
        {
            // test/FastFiles.FunctionalTests/bin/<Configuration>/<tfm>/
            string dir = AppContext.BaseDirectory.TrimEnd(Path.DirectorySeparatorChar);
            string tfm = Path.GetFileName(dir);
            string configuration = Path.GetFileName(Path.GetDirectoryName(dir)!);
            string repo = Path.GetFullPath(Path.Combine(dir, "..", "..", "..", "..", ".."));
            return Path.Combine(repo, "samples", "FastFiles.Sample", "bin", configuration, tfm, "FastFiles.Sample.dll");
        }
    }

    /// <summary>
    /// Starts the sample serving <paramref name="root"/>; <paramref name="maxOpenFiles"/> sets RLIMIT_NOFILE;
    /// <paramref name="launcher"/>, a command and its arguments, runs the sample's <c>dotnet</c> command line.
    /// </summary>
    public static async Task<SampleProcess> StartAsync(string root, int? maxOpenFiles = null, IDictionary<string, string>? environment = null, IReadOnlyList<string>? launcher = null)
    {
        var start = new ProcessStartInfo
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        var command = new List<string>(launcher ?? []);
        if (maxOpenFiles is int limit)
        {
            command.AddRange(["prlimit", $"--nofile={limit}:{limit}"]);
        }

        command.Add("dotnet");
        start.FileName = command[0];
        foreach (string part in command.Skip(1))
        {
            start.ArgumentList.Add(part);
        }

        foreach (string argument in new[] { SampleDll, "--root", root, "--urls", "http://127.0.0.1:0;https://127.0.0.1:0" })
        {
            start.ArgumentList.Add(argument);
        }

        start.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        foreach ((string key, string value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[key] = value;
        }

        Process process = Process.Start(start)!;
        var addresses = new List<string>();
        var ready = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var output = new ConcurrentQueue<string>();
        void OnLine(object? sender, DataReceivedEventArgs e)
        {
            if (e.Data is null)
            {
                // End of output: the process is gone (harmless once it was ready).
                ready.TrySetException(new InvalidOperationException("The sample exited before listening:\n" + string.Join('\n', output)));
                return;
            }

            output.Enqueue(e.Data);
            const string Listening = "  listening on ";
            if (e.Data.StartsWith(Listening, StringComparison.Ordinal))
            {
                lock (addresses)
                {
                    addresses.Add(e.Data[Listening.Length..].Trim());
                }
            }
            else if (e.Data.StartsWith("Press Ctrl+C", StringComparison.Ordinal))
            {
                ready.TrySetResult();
            }
        }

        process.OutputDataReceived += OnLine;
        process.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is not null)
            {
                output.Enqueue(e.Data);
            }
        };
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        try
        {
            await ready.Task.WaitAsync(TimeSpan.FromSeconds(60));
        }
        catch
        {
            process.Kill(entireProcessTree: true);
            process.Dispose();
            throw;
        }

        Uri http = new(addresses.First(a => a.StartsWith("http://", StringComparison.Ordinal)));
        Uri https = new(addresses.First(a => a.StartsWith("https://", StringComparison.Ordinal)));
        return new SampleProcess(process, http, https, output);
    }

    /// <summary>Waits until the process has exited and its output has been read.</summary>
    public Task WaitForExitAsync(CancellationToken cancellationToken) => _process.WaitForExitAsync(cancellationToken);

    /// <summary>How many descriptors the process holds (from /proc).</summary>
    public int OpenDescriptors() => Directory.GetFileSystemEntries($"/proc/{_process.Id}/fd").Length;

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited)
        {
            _process.Kill(entireProcessTree: true);
            await _process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(30));
        }

        _process.Dispose();
    }
}
