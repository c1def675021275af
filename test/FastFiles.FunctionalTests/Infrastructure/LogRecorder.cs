using System.Collections.Concurrent;
using FastFiles.Diagnostics;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>Keeps every log entry of a test host at Warning or above (the host's minimum), for assertions on what was logged.</summary>
public sealed class LogRecorder : ILoggerProvider
{
    private readonly ConcurrentQueue<(LogLevel Level, string Category, string Message)> _entries = new();

    public IEnumerable<string> AtLeast(LogLevel level)
        => _entries.Where(e => e.Level >= level).Select(e => $"{e.Level} {e.Category}: {e.Message}");

    /// <summary>Fails if anything was logged at Error or above, naming every such entry whole (message and exception).</summary>
    public void AssertNoErrors()
    {
        string[] errors = [.. AtLeast(LogLevel.Error)];
        Assert.True(errors.Length == 0, string.Join("\n", errors));
    }

    public ILogger CreateLogger(string categoryName) => new Logger(this, categoryName);

    public void Dispose()
    {
    }

    private sealed class Logger(LogRecorder owner, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel != LogLevel.None;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
            => owner._entries.Enqueue((logLevel, category, formatter(state, exception) + (exception is null ? string.Empty : " " + exception)));
    }
}
