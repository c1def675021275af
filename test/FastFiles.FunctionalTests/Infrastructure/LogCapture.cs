using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>A logger provider that keeps every entry at or above Information, for tests that assert on logs.</summary>
public sealed class LogCapture : ILoggerProvider
{
    private readonly ConcurrentQueue<Entry> _entries = new();

    public IReadOnlyList<Entry> Entries => _entries.ToArray();

    /// <summary>The entries with this event id.</summary>
    public IReadOnlyList<Entry> WithId(int eventId) => _entries.Where(e => e.EventId.Id == eventId).ToArray();

    public ILogger CreateLogger(string categoryName) => new Logger(this, categoryName);

    public void Dispose()
    {
    }

    public sealed record Entry(string Category, LogLevel Level, EventId EventId, string Message);

    private sealed class Logger(LogCapture owner, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel >= LogLevel.Information;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (IsEnabled(logLevel))
            {
                owner._entries.Enqueue(new Entry(category, logLevel, eventId, formatter(state, exception)));
            }
        }
    }
}
