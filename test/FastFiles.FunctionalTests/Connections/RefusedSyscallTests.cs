using System.Net;
using System.Net.Http.Headers;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// The sample as shipped (static lane, zero-copy send path, FastResults downloads) under a seccomp filter that refuses a
/// system call FastFiles prefers, as container runtimes' profiles do: statx(2) with EPERM (older Docker and runc) or
/// ENOSYS (newer profiles, kernels before 4.11), sendfile(2) with either. Stock ASP.NET Core uses neither, so the sample
/// must answer as it does without the filter: every file served whole, ranges and downloads right, missing files 404,
/// no error logs. Before: with statx refused every file was a 404 (and SendFileAsync a 500); with sendfile refused every
/// body the send path took reset its connection.
/// </summary>
public sealed class RefusedSyscallTests : IDisposable
{
    private readonly TestFiles _files = new();

    public void Dispose() => _files.Dispose();

    [Theory]
    [InlineData("statx", "EPERM")]
    [InlineData("statx", "ENOSYS")]
    [InlineData("sendfile", "EPERM")]
    [InlineData("sendfile", "ENOSYS")]
    public async Task The_sample_serves_every_file_with_a_call_refused(string call, string errno)
    {
        byte[] small = _files.Create("small.txt", 2000);
        byte[] medium = _files.Create("docs/medium.bin", 100_000, seed: 2);
        byte[] big = _files.Create("big.bin", 1024 * 1024 + 3, seed: 3);
        string script = Path.Combine(AppContext.BaseDirectory, "Infrastructure", "refuse-syscalls.py");
        await using SampleProcess sample = await SampleProcess.StartAsync(_files.Root, launcher: ["python3", script, errno, call, "--"]);

        using var handler = new SocketsHttpHandler { SslOptions = { RemoteCertificateValidationCallback = (_, _, _, _) => true } };
        using var client = new HttpClient(handler);
        foreach (Uri endpoint in new[] { sample.Http, sample.Https })
        {
            // Twice each: the first response may meet the refusal part-way, the second finds it known; one keep-alive
            // connection per endpoint carries them all.
            for (int round = 0; round < 2; round++)
            {
                Assert.Equal(small, await client.GetByteArrayAsync(new Uri(endpoint, "/small.txt")));
                Assert.Equal(medium, await client.GetByteArrayAsync(new Uri(endpoint, "/docs/medium.bin")));
                Assert.Equal(big, await client.GetByteArrayAsync(new Uri(endpoint, "/big.bin")));
                Assert.Equal(big, await client.GetByteArrayAsync(new Uri(endpoint, "/download/big.bin")));

                using var range = new HttpRequestMessage(HttpMethod.Get, new Uri(endpoint, "/big.bin")) { Headers = { Range = new RangeHeaderValue(70_000, 999_999) } };
                using HttpResponseMessage partial = await client.SendAsync(range);
                Assert.Equal(HttpStatusCode.PartialContent, partial.StatusCode);
                Assert.Equal(big.AsSpan(70_000, 930_000).ToArray(), await partial.Content.ReadAsByteArrayAsync());

                using HttpResponseMessage missing = await client.GetAsync(new Uri(endpoint, "/missing.txt"));
                Assert.Equal(HttpStatusCode.NotFound, missing.StatusCode);
            }
        }

        Assert.True(sample.IsRunning);
        string[] errors = [.. sample.Output.Where(line => line.StartsWith("fail:", StringComparison.Ordinal) || line.StartsWith("crit:", StringComparison.Ordinal))];
        Assert.True(errors.Length == 0, string.Join('\n', sample.Output));
    }
}
