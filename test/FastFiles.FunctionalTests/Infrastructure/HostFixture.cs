namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>
/// The shape every class fixture of the functional tests shares: a directory of test files and a real Kestrel
/// (<see cref="TestHost"/>) serving them, stopped at the end, after which no descriptor under the files' root may stay
/// open (a leaked handle fails the class), and the files are deleted.
/// </summary>
public abstract class HostFixture : IAsyncLifetime
{
    /// <summary>The files this class serves; deleted when the fixture is disposed.</summary>
    public TestFiles Files { get; } = new();

    /// <summary>The server, started by <see cref="StartHostAsync"/>.</summary>
    public TestHost Host { get; private set; } = null!;

    public async Task InitializeAsync() => Host = await StartHostAsync();

    public async Task DisposeAsync()
    {
        try
        {
            await StoppingAsync();
            if (Host is not null)
            {
                await Host.DisposeAsync();
            }

            await ResponseHeaders.AssertNoOpenFilesUnderAsync(Files.Root);
        }
        finally
        {
            Files.Dispose();
        }
    }

    /// <summary>Writes the files and starts the host.</summary>
    protected abstract Task<TestHost> StartHostAsync();

    /// <summary>Runs before the host stops (for example, to stop a sample process that reads the same files).</summary>
    protected virtual Task StoppingAsync() => Task.CompletedTask;
}
