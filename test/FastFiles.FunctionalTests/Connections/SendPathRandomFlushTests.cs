using System.Globalization;
using System.IO.Pipelines;
using System.Text;
using System.Text.RegularExpressions;
using FastFiles.Connections.SendPath;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.FileProviders;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// Pipelined bursts of responses written in random shapes (writes of 1 B to 40 KB, memory asked for in sizes that take
/// large blocks, flushes or none, flushes canceled while they wait, chunked or Content-Length) mixed with sendfile bodies
/// and multipart ranges, read by a fast client, a slow one and one that starts late: the send path's batching, its
/// packing of small flushes into waiting blocks and its holes must give the bytes Kestrel's own output gives, under each
/// kind of <c>MaxResponseBufferSize</c>, and give back every block.
/// </summary>
public abstract partial class SendPathRandomFlushTestsBase(SendPathRandomFlushTestsBase.Fixture fixture)
{
    private const int Rounds = 3;
    private const int RequestsPerBurst = 40;

    private static readonly TimeSpan Bound = TimeSpan.FromSeconds(120);

    private readonly Fixture _f = fixture;

    public abstract class Fixture(long? maxResponseBufferSize) : HostFixture
    {
        protected override Task<TestHost> StartHostAsync()
        {
            Files.Create("big.bin", 100_000);
            // Old enough for the send path's recently-written window, so these bodies go out as holes.
            File.SetLastWriteTimeUtc(Files.PathOf("big.bin"), DateTime.UtcNow.AddHours(-1));
            return TestHost.StartAsync(
                app =>
                {
                    app.MapGet("/stream/{seed:int}/{chunked:int}", (HttpContext context, int seed, int chunked) => WriteRandomAsync(context, seed, chunked != 0));
                    app.UseFastFiles(new FastStaticFileOptions { RequestPath = "/fast", FileProvider = new PhysicalFileProvider(Files.Root) });
                },
                services => services.AddFastFiles(o => o.EnableFileCache = false),
                configureKestrel: k => k.Limits.MaxResponseBufferSize = maxResponseBufferSize);
        }

        private static async Task WriteRandomAsync(HttpContext context, int seed, bool chunked)
        {
            // The shape is drawn first, so the Content-Length is known before the first write.
            var random = new Random(seed);
            int writes = random.Next(5, 60);
            var sizes = new int[writes];
            var hints = new int[writes];
            var flushes = new bool[writes];
            var cancels = new bool[writes];
            long total = 0;
            for (int i = 0; i < writes; i++)
            {
                int kind = random.Next(10);
                sizes[i] = kind < 5 ? random.Next(1, 200) : kind < 9 ? random.Next(200, 4200) : random.Next(4200, 40000);
                hints[i] = random.Next(4) == 0 ? random.Next(16385, 80000) : 0;
                flushes[i] = random.Next(4) != 0;
                cancels[i] = random.Next(12) == 0;
                total += sizes[i];
            }

            if (!chunked)
            {
                context.Response.ContentLength = total;
            }

            PipeWriter writer = context.Response.BodyWriter;
            long at = 0;
            for (int i = 0; i < writes; i++)
            {
                for (int left = sizes[i]; left > 0;)
                {
                    Memory<byte> memory = writer.GetMemory(Math.Max(hints[i], 1));
                    int count = Math.Min(left, memory.Length);
                    Fill(memory.Span[..count], seed, at);
                    writer.Advance(count);
                    at += count;
                    left -= count;
                }

                if (flushes[i])
                {
                    ValueTask<FlushResult> flush = writer.FlushAsync();
                    if (cancels[i] && !flush.IsCompleted)
                    {
                        // As a Pipe's: the wait is given up, the bytes still go out.
                        writer.CancelPendingFlush();
                    }

                    await flush;
                }
            }
        }
    }

    /// <summary>The byte at <paramref name="at"/> of the response drawn with <paramref name="seed"/>.</summary>
    private static void Fill(Span<byte> span, int seed, long at)
    {
        for (int j = 0; j < span.Length; j++)
        {
            span[j] = (byte)(((seed * 31) + at + j) % 251);
        }
    }

    // A fast reader; a slow one (4 KiB buffer, reads of 1,500 bytes, 1 ms pause every 8); a late one (the same buffer,
    // 100 ms before its first read, so the batching send fills and waits, then 20 ms every 64 reads).
    private static readonly (string Name, ReadPace Pace)[] Readers =
    [
        ("fast", ReadPace.Fast),
        ("slow", new(4096, 1500, PauseEvery: 8, Pause: TimeSpan.FromMilliseconds(1))),
        ("late", new(4096, 1500, PauseEvery: 64, Pause: TimeSpan.FromMilliseconds(20), StartDelay: TimeSpan.FromMilliseconds(100))),
    ];

    [Fact]
    public async Task Random_flush_shapes_pipelined_give_Kestrels_bytes_and_keep_no_block()
    {
        string host = _f.Host.Http.Authority;
        for (int round = 0; round < Rounds; round++)
        {
            var random = new Random(round);
            var burst = new StringBuilder();
            for (int i = 0; i < RequestsPerBurst; i++)
            {
                string request = random.Next(10) switch
                {
                    0 => "GET /fast/big.bin HTTP/1.1\r\n",
                    1 => "GET /fast/big.bin HTTP/1.1\r\nRange: bytes=0-99,5000-50000,90000-99999\r\n",
                    2 => "GET /fast/big.bin HTTP/1.1\r\nRange: bytes=100-70000\r\n",
                    _ => $"GET /stream/{(round * 1000) + i}/{random.Next(2)} HTTP/1.1\r\n",
                };
                burst.Append(request).Append(CultureInfo.InvariantCulture, $"Host: {host}\r\n\r\n");
            }

            burst.Append(CultureInfo.InvariantCulture, $"GET /stream/7/0 HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
            byte[] requests = Encoding.ASCII.GetBytes(burst.ToString());
            string expected = Normalized(await RawHttp.ExchangeToCloseAsync(_f.Host.HttpCopy, requests, ReadPace.Fast, Bound), out int answered);
            Assert.Equal(RequestsPerBurst + 1, answered);
            foreach ((string name, ReadPace pace) in Readers)
            {
                string actual = Normalized(await RawHttp.ExchangeToCloseAsync(_f.Host.Http, requests, pace, Bound), out _);
                Assert.True(expected == actual, $"Round {round}, {name} reader: the send path's responses differ from Kestrel's ({actual.Length} against {expected.Length} characters).");
            }
        }

        Assert.Equal(0, await Poll.UntilAsync(() => BlockPool.Outstanding, 0));
    }

    /// <summary>
    /// The responses in order, each as its head and its decoded body, Date values and multipart boundaries blanked
    /// (<see cref="LaneHost.WithoutDates"/>): chunk sizes follow the memory each writer hands out, so they are not compared. <paramref name="count"/>:
    /// how many responses there were.
    /// </summary>
    private static string Normalized(byte[] responses, out int count)
    {
        string all = Encoding.Latin1.GetString(responses);
        var normalized = new StringBuilder();
        int at = 0;
        count = 0;
        for (int index = 0; at < all.Length; index++)
        {
            count = index + 1;
            int end = all.IndexOf("\r\n\r\n", at, StringComparison.Ordinal);
            if (end < 0)
            {
                normalized.Append("TRAILING:").Append(all.AsSpan(at));
                break;
            }

            string head = all[at..(end + 4)];
            at = end + 4;
            string body;
            Match length = ContentLength().Match(head);
            if (head.Contains("Transfer-Encoding: chunked", StringComparison.OrdinalIgnoreCase))
            {
                body = Encoding.Latin1.GetString(RawHttp.Dechunk(responses.AsSpan(at), out int consumed));
                at += consumed;
            }
            else if (length.Success)
            {
                int bodyLength = int.Parse(length.Groups[1].Value, CultureInfo.InvariantCulture);
                body = all.Substring(at, Math.Min(bodyLength, all.Length - at));
                at += bodyLength;
            }
            else
            {
                body = string.Empty;
            }

            normalized.Append(CultureInfo.InvariantCulture, $"#{index}\n").Append(LaneHost.WithoutDates(Encoding.Latin1.GetBytes(head + body))).Append('\n');
        }

        return normalized.ToString();
    }

    [GeneratedRegex("Content-Length: (\\d+)", RegexOptions.IgnoreCase)]
    private static partial Regex ContentLength();
}

/// <summary>Kestrel's default limit, 64 KiB.</summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathRandomFlushTests(SendPathRandomFlushTests.DefaultLimit fixture)
    : SendPathRandomFlushTestsBase(fixture), IClassFixture<SendPathRandomFlushTests.DefaultLimit>
{
    public sealed class DefaultLimit() : Fixture(64 * 1024);
}

/// <summary>No limit: bytes wait unbounded, blocks bounded.</summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathRandomFlushNoLimitTests(SendPathRandomFlushNoLimitTests.NoLimit fixture)
    : SendPathRandomFlushTestsBase(fixture), IClassFixture<SendPathRandomFlushNoLimitTests.NoLimit>
{
    public sealed class NoLimit() : Fixture(null);
}

/// <summary>A limit of 0: no batching.</summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathRandomFlushZeroLimitTests(SendPathRandomFlushZeroLimitTests.ZeroLimit fixture)
    : SendPathRandomFlushTestsBase(fixture), IClassFixture<SendPathRandomFlushZeroLimitTests.ZeroLimit>
{
    public sealed class ZeroLimit() : Fixture(0);
}

/// <summary>A limit below one block (5,000 bytes), so the bound is met within a block.</summary>
[Collection(SendPathCollection.Name)]
public sealed class SendPathRandomFlushSmallLimitTests(SendPathRandomFlushSmallLimitTests.SmallLimit fixture)
    : SendPathRandomFlushTestsBase(fixture), IClassFixture<SendPathRandomFlushSmallLimitTests.SmallLimit>
{
    public sealed class SmallLimit() : Fixture(5000);
}
