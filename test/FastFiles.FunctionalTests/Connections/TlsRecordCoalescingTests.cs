using System.Diagnostics.Metrics;
using System.Net;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>TLS record coalescing over real TLS sockets: every byte arrives, in order, on HTTP/2 and HTTP/1.1.</summary>
public sealed class TlsRecordCoalescingTests : IDisposable
{
    private static readonly int[] Sizes = [0, 1, 100, 4095, 4096, 4097, 16383, 16384, 16385, 65536, 100_000, 1024 * 1024 + 3];
    private readonly SizedFiles _sized = new(Sizes);
    private readonly ServerProbe _probe = new();

    public void Dispose() => _sized.Dispose();

    // On the TLS endpoint after UseHttps, and on the h2c endpoint, where it must pass connections through.
    private Task<TestHost> StartAsync()
        => TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureTls: l => l.UseTlsRecordCoalescing(),
            configureH2c: l => l.UseTlsRecordCoalescing());

    [Theory]
    [InlineData(Transport.H2Tls)]
    [InlineData(Transport.Http11Tls)]
    [InlineData(Transport.H2c)]
    public async Task Concurrent_responses_of_every_size_arrive_intact(Transport transport)
    {
        await using TestHost host = await StartAsync();

        await Task.WhenAll(Enumerable.Range(0, 120).Select(i => _sized.AssertServedAsync(host, transport, Sizes[i % Sizes.Length])));
    }

    [Theory]
    [InlineData(Transport.H2Tls)]
    [InlineData(Transport.Http11Tls)]
    public async Task With_the_stage_behind_it_responses_arrive_intact(Transport transport)
    {
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureTls: l => l.UseTlsRecordCoalescing().UseHttp2TlsOutputStage(o => o.Mode = Http2TlsOutputStageMode.AllProtocols));

        await Task.WhenAll(Enumerable.Range(0, 60).Select(i => _sized.AssertServedAsync(host, transport, Sizes[i % Sizes.Length])));
    }

    [Fact]
    public async Task Client_that_stops_reading_is_disconnected_by_the_data_rate_rules()
    {
        // The writer's flush waits on SslStream; Kestrel's abort must still reach it and end the response.
        const long Length = 256L * 1024 * 1024;
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureKestrel: k => k.Limits.MinResponseDataRate = new MinDataRate(bytesPerSecond: 1024 * 1024, gracePeriod: TimeSpan.FromSeconds(2)),
            configureTls: l => l.UseTlsRecordCoalescing());

        await using RawHttp2Client client = await RawHttp2Client.ConnectAsync(host.Https, initialWindowSize: int.MaxValue, connectionWindowIncrement: int.MaxValue - 65535, receiveBufferSize: 4096);
        await client.SendGetAsync(1, $"/stream/{Length}");
        while ((await client.ReadFrameAsync())!.Type != RawHttp2Client.Data)
        {
        }

        // Not reading any more: the response must be aborted rather than hang or buffer the body.
        await _probe.StreamAborted.Task.WaitAsync(TimeSpan.FromSeconds(60));
        Assert.True(_probe.StreamBytesFlushed < Length / 4, $"app flushed {_probe.StreamBytesFlushed}");
        Assert.False(_probe.StreamCompleted.Task.IsCompleted);
    }

    [Fact]
    public async Task Streamed_response_with_flushes_between_writes_arrives_in_order()
    {
        await using TestHost host = await StartAsync();
        const int Length = 3 * 1024 * 1024 + 17;

        foreach (Transport transport in TransportMatrix.Tls)
        {
            using HttpResponseMessage response = await host.SendAsync(transport, $"/stream/{Length}");
            byte[] body = await response.Content.ReadAsByteArrayAsync();
            Assert.Equal(Length, body.Length);
            for (int offset = 0; offset < Length; offset += StageTestApp.Pattern.Length)
            {
                int count = Math.Min(StageTestApp.Pattern.Length, Length - offset);
                Assert.True(body.AsSpan(offset, count).SequenceEqual(StageTestApp.Pattern.AsSpan(0, count)), $"{transport}: bytes differ in [{offset}, {offset + count})");
            }
        }
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task ListenOptions_UseFastFiles_adds_coalescing_inside_tls_only_when_enabled(bool enabled)
    {
        await using TestHost host = await TestHost.StartAsync(
            StageTestApp.Configure(_sized.Files, _probe),
            configureKestrel: k => k.UseFastFilesConnections(o => o.EnableTlsRecordCoalescing = enabled),
            configureTls: l => l.UseFastFilesConnections(),
            configureH2c: l => l.UseFastFilesConnections());
        using var coalesced = new InstrumentRecorder(host.Services.GetRequiredService<IMeterFactory>(), "fastfiles.tls_records.coalesced_connections");

        await _sized.AssertServedAsync(host, Transport.H2Tls, 100_000);
        await _sized.AssertServedAsync(host, Transport.Http11Tls, 100_000);
        await _sized.AssertServedAsync(host, Transport.H2c, 100_000);

        // Two TLS connections; the h2c one has no TLS and is passed through.
        Assert.Equal(enabled ? 2 : 0, coalesced.Total);
    }
}

