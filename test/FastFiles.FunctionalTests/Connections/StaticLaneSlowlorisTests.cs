using System.Diagnostics.Metrics;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;
using Microsoft.Extensions.DependencyInjection;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// A request dribbled a byte at a time (slowloris) stays in the static lane and is answered at RequestHeadersTimeout
/// from its first bytes with what Kestrel itself answers (408, Connection: close), then closed. Handed to Kestrel after
/// a few reads, it would get Kestrel's own header timer afresh (issue 10: 0 of 200 such connections were closed after
/// 34 s with a 30 s timeout before).
/// </summary>
public sealed class StaticLaneSlowlorisTests : IDisposable
{
    private readonly TestFiles _files = new();

    [Fact]
    public async Task A_dribbled_request_gets_Kestrels_408_from_the_lane_and_is_closed()
    {
        _files.Create("one.txt", 100);
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, k => k.Limits.RequestHeadersTimeout = TimeSpan.FromSeconds(3));
        Task<string> kestrel = ScriptAsync(host.Plain, [], filler: "X");
        Task<string> lane = ScriptAsync(host.Lane, [], filler: "X");
        string expected = await kestrel;
        Assert.StartsWith("HTTP/1.1 408 Request Timeout\r\n", expected, StringComparison.Ordinal);
        Assert.Equal(LaneHost.WithoutDates(Encoding.Latin1.GetBytes(expected)), LaneHost.WithoutDates(Encoding.Latin1.GetBytes(await lane)));

    }

    // What the dribbled requests of the first test below turn into.
    private static readonly (string Name, string Turn)[] DribbledTurns =
    [
        // A header the lane leaves to the app, then more lines: Kestrel would still be waiting for the header section.
        ("unhandled header", "Authorization: Basic eDp5\r\n"),
        ("framing header", "Transfer-Encoding: chunked\r\n"),
        // A valid Content-Length: Kestrel accepts the line and waits for the rest of the header section.
        ("content length", "Content-Length: 0\r\n"),
        // More than the lane's few KiB for a quick request, still within Kestrel's header limit.
        ("long line", "X-Long: " + new string('a', 9000)),
        // Lines Kestrel takes as they arrive and judges later, if at all: UTF-8 and a control byte in a value, a name
        // with a byte outside the token set, a signed Content-Length, a bare LF.
        ("utf-8 value", "X-Name: caf\u00c3\u00a9\r\n"),
        ("control byte", "X-Ctl: a\u0001b\r\n"),
        ("odd name", "X(Y): z\r\n"),
        ("signed length", "Content-Length: +0\r\n"),
        ("bare lf", "X-Lf: y\n"),
    ];

    // The cases of each test below run at once, each against a host of its own (its own timers, connections and
    // meters, so every assertion is the case's alone): most of a case is waiting for the server's deadline.

    // A request dribbled past a second that then turns into one the lane does not answer, its header section unfinished:
    // it stays in the lane under the deadline its first bytes started and gets Kestrel's 408 from there. Handed to Kestrel
    // at the turn, it would get a header timer of its own, twice the time in all.
    [Fact]
    public async Task A_dribbled_request_that_turns_unhandled_stays_under_its_first_deadline()
    {
        _files.Create("one.txt", 100);
        await EachAsync(DribbledTurns, c => c.Name, c => StaysUnderFirstDeadlineAsync(["X-A: 1\r\n", "X-B: 2\r\n", c.Turn]));
    }

    // A request line dribbled past the lane's one-second mark that turns out to hold a target the lane leaves to Kestrel
    // but Kestrel takes (it waits for the header section): an escape, UTF-8 escapes, escapes it cannot decode, a control
    // byte, a query with escapes. It stays under the deadline its first bytes started, as the turns above do. The turn
    // comes with the third step (2.1 s): the lane counts its one-second mark from when it read the first bytes, which
    // on a loaded machine can be late (the second step, at 1.4 s, was once seen inside the mark in CI).
    [Fact]
    public async Task A_dribbled_request_line_with_an_escape_stays_under_its_first_deadline()
    {
        _files.Create("one.txt", 100);
        string[] tails = ["e%2Etxt", "n%C3%A9.txt", "e%zz.txt", "e%FF.txt", "e%C3.txt", "e\u0001.txt", "e\u007F.txt", "e.txt?q=%00%C3"];
        await EachAsync(tails, t => t, t => StaysUnderFirstDeadlineAsync(["n", t[..1], t[1..] + " HTTP/1.1\r\nHost: localhost\r\n"], start: "GET /o"));
    }

    // A request line dribbled past the one-second mark that began like GET or HEAD (a method that does not goes to
    // Kestrel with its first bytes) and turns out to be another method or target form that Kestrel takes: Kestrel waits
    // for the header section, so the lane keeps the request under the deadline its first bytes started. Handed over when
    // the line ended, Kestrel's header timer would start afresh.
    [Fact]
    public async Task A_dribbled_request_line_of_another_method_or_form_stays_under_its_first_deadline()
    {
        _files.Create("one.txt", 100);
        string[] lines =
        [
            "GETX /one.txt HTTP/1.1",
            "GET http://localhost/one.txt HTTP/1.1",
            "HEAD https://localhost:443/one.txt?q=%00 HTTP/1.0",
            "GET http://localhost:80/%00 HTTP/1.1",
        ];
        await EachAsync(lines, l => l, l => StaysUnderFirstDeadlineAsync([l[2..3], l[3..4], l[4..] + "\r\nHost: localhost\r\n"], start: l[..2]));
    }

    // Dribbled until complete, such a request goes to Kestrel then, which answers it as it would have alone.
    [Fact]
    public async Task A_dribbled_request_of_another_method_or_form_goes_to_Kestrel_once_complete()
    {
        _files.Create("one.txt", 100);
        (string Line, string Status)[] cases = [("GET http://localhost/one.txt HTTP/1.1", "HTTP/1.1 200 OK\r\n"), ("GETX /one.txt HTTP/1.1", "HTTP/1.1 ")];
        await EachAsync(cases, c => c.Line, c => GoesToKestrelAsync(
            [c.Line[2..3], c.Line[3..] + "\r\nHost: localhost\r\n", "Content-Length: 0\r\nConnection: close\r\n\r\n"],
            expected => Assert.StartsWith(c.Status, expected, StringComparison.Ordinal),
            start: c.Line[..2]));
    }

    // Dribbled request lines Kestrel refuses as soon as it has them, by method and form: they go to Kestrel at once.
    [Fact]
    public async Task A_dribbled_request_line_of_a_form_Kestrel_refuses_goes_to_Kestrel_at_once()
    {
        _files.Create("one.txt", 100);
        string[] lines = ["GET HTTP://localhost/one.txt HTTP/1.1", "GET http://localhost:65536/one.txt HTTP/1.1", "GET * HTTP/1.1"];
        await EachAsync(lines, l => l, l => GoesToKestrelAsync(
            [l[2..3], l[3..] + "\r\nHost: localhost\r\n"],
            expected => Assert.Matches("^HTTP/1.1 40[05] ", expected),
            start: l[..2]));
    }

    // A dribbled request line Kestrel refuses as soon as it has it (a byte outside ASCII, a path escape of NUL) goes to
    // Kestrel at once, for its own 400.
    [Fact]
    public async Task A_dribbled_request_line_Kestrel_refuses_goes_to_Kestrel_at_once()
    {
        _files.Create("one.txt", 100);
        string[] tails = ["n\u00C3\u00A9.txt", "e%00.txt", "e.txt?\u00E9"];
        await EachAsync(tails, t => t, t => GoesToKestrelAsync(
            ["n", t + " HTTP/1.1\r\nHost: localhost\r\n"],
            expected => Assert.StartsWith("HTTP/1.1 400 Bad Request\r\n", expected, StringComparison.Ordinal),
            start: "GET /o"));
    }

    // Once such a request is complete it goes to Kestrel at once, which answers it; a line Kestrel rejects goes to
    // Kestrel as soon as it arrives, for Kestrel's own 400.
    [Fact]
    public async Task A_dribbled_request_goes_to_Kestrel_once_complete_or_rejected()
    {
        _files.Create("one.txt", 100);
        (string Turn, string Status)[] cases =
        [
            ("Authorization: Basic eDp5\r\n\r\n", "HTTP/1.1 200 OK\r\n"),
            ("Authorization: Basic eDp5\r\nBad Header\r\n", "HTTP/1.1 400 Bad Request\r\n"),
            ("X-Obs: a\r\n folded\r\n", "HTTP/1.1 400 Bad Request\r\n"),
            ("Authorization: Basic eDp5\r\nContent-Length: abc\r\n", "HTTP/1.1 400 Bad Request\r\n"),
            ("Content-Length: 1\r\nContent-Length: 2\r\n", "HTTP/1.1 400 Bad Request\r\n"),
            ("Authorization: Basic eDp5\r\n\rX", "HTTP/1.1 400 Bad Request\r\n"),
            ("X-Cr: a\rb", "HTTP/1.1 400 Bad Request\r\n"),
            ("Content-Length: 1,1\r\n", "HTTP/1.1 400 Bad Request\r\n"),
            ("X-Name: \u00c3\r\n", "HTTP/1.1 400 Bad Request\r\n"),
        ];
        await EachAsync(cases, c => c.Turn, c => GoesToKestrelAsync(
            ["X-A: 1\r\n", "X-B: 2\r\n", c.Turn],
            expected => Assert.StartsWith(c.Status, expected, StringComparison.Ordinal)));
    }

    // The 408 Kestrel alone gives a request dribbled past RequestHeadersTimeout (3 s), byte for byte but Date, from the
    // lane too, with no hand-off.
    private async Task StaysUnderFirstDeadlineAsync(string[] steps, string? start = null)
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, k => k.Limits.RequestHeadersTimeout = TimeSpan.FromSeconds(3));
        using var handOffs = new InstrumentRecorder(host.Services.GetRequiredService<IMeterFactory>(), "fastfiles.lane.handoffs");
        Task<string> kestrel = ScriptAsync(host.Plain, steps, "X-C: 3\r\n", start);
        Task<string> lane = ScriptAsync(host.Lane, steps, "X-C: 3\r\n", start);
        string expected = await kestrel;
        Assert.StartsWith("HTTP/1.1 408 Request Timeout\r\n", expected, StringComparison.Ordinal);
        Assert.Equal(LaneHost.WithoutDates(Encoding.Latin1.GetBytes(expected)), LaneHost.WithoutDates(Encoding.Latin1.GetBytes(await lane)));
        Assert.Equal(0, handOffs.Total);
    }

    // What Kestrel alone answers a request dribbled to its end (checked by expect), byte for byte but Date, from the lane
    // too, after exactly one hand-off. The steps take about 2 s (past the lane's one-second dribble mark); the header
    // timeout is far beyond them, so a busy machine that stretches the steps still gets the answer, not a 408 (seen once
    // in CI with 3 s).
    private async Task GoesToKestrelAsync(string[] steps, Action<string> expect, string? start = null)
    {
        await using LaneHost host = await LaneHost.StartAsync(_files.Root, k => k.Limits.RequestHeadersTimeout = TimeSpan.FromSeconds(15));
        using var handOffs = new InstrumentRecorder(host.Services.GetRequiredService<IMeterFactory>(), "fastfiles.lane.handoffs");
        Task<string> kestrel = ScriptAsync(host.Plain, steps, filler: null, start);
        Task<string> lane = ScriptAsync(host.Lane, steps, filler: null, start);
        string expected = await kestrel;
        expect(expected);
        Assert.Equal(LaneHost.WithoutDates(Encoding.Latin1.GetBytes(expected)), LaneHost.WithoutDates(Encoding.Latin1.GetBytes(await lane)));
        Assert.Equal(1, handOffs.Total);
    }

    // Runs every case at once and fails with each failing case's name and message, not only the first.
    private static async Task EachAsync<T>(IReadOnlyList<T> cases, Func<T, string> name, Func<T, Task> run)
    {
        string?[] failures = await Task.WhenAll(cases.Select(async c =>
        {
            try
            {
                await run(c);
                return null;
            }
            catch (Exception e)
            {
                return $"case {name(c).Replace("\r", "\\r").Replace("\n", "\\n")}: {e.Message}";
            }
        }));
        string[] failed = failures.OfType<string>().ToArray();
        Assert.True(failed.Length == 0, $"{failed.Length} of {cases.Count} cases failed:\n" + string.Join("\n", failed));
    }

    // Graceful shutdown while a request is arriving: Kestrel finishes a request it has begun to read and closes; so
    // does the lane, with Connection: close.
    [Fact]
    public async Task A_request_under_way_at_graceful_shutdown_is_answered_and_closed()
    {
        byte[] file = _files.Create("one.txt", 100);
        await using LaneHost host = await LaneHost.StartAsync(_files.Root);
        (string kestrel, string lane) = await host.ExchangeAcrossShutdownAsync("GET /one.txt HTTP/1.1\r\nHost: localhost\r\n", "\r\n");
        Assert.StartsWith("HTTP/1.1 200 OK\r\n", kestrel, StringComparison.Ordinal);
        Assert.Contains("\r\nConnection: close\r\n", kestrel, StringComparison.Ordinal);
        Assert.EndsWith(Encoding.Latin1.GetString(file), kestrel, StringComparison.Ordinal);
        Assert.Equal(kestrel, lane);
    }

    // start (by default the request line and Host), then one step every 700 ms, then the filler every 700 ms (none: wait),
    // until the server closes (bounded); returns everything the server sent.
    private static async Task<string> ScriptAsync(Uri endpoint, string[] steps, string? filler, string? start = null)
    {
        start ??= "GET /one.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
        (Socket socket, Stream stream) = await LaneHost.ConnectAsync(endpoint);
        using (socket)
        await using (stream)
        {
            await stream.WriteAsync(Encoding.ASCII.GetBytes(start));
            var received = new MemoryStream();
            var buffer = new byte[16 * 1024];
            using var bound = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            Task<int> read = stream.ReadAsync(buffer, bound.Token).AsTask();
            int step = 0;
            while (!bound.IsCancellationRequested)
            {
                await Task.WhenAny(read, Task.Delay(700, bound.Token));
                if (read.IsCompleted)
                {
                    int n;
                    try
                    {
                        n = await read;
                    }
                    catch (IOException)
                    {
                        n = 0;
                    }

                    if (n == 0)
                    {
                        break;
                    }

                    received.Write(buffer, 0, n);
                    read = stream.ReadAsync(buffer, bound.Token).AsTask();
                    continue;
                }

                string? next = step < steps.Length ? steps[step++] : filler;
                if (next is null)
                {
                    continue;
                }

                try
                {
                    // Latin-1: a step can carry any byte (\u0080-\u00FF) as itself.
                    await stream.WriteAsync(Encoding.Latin1.GetBytes(next), bound.Token);
                }
                catch (IOException)
                {
                    // The server closed its side; the read loop collects what it sent.
                }
            }

            Assert.False(bound.IsCancellationRequested, "the server did not close the connection");
            return Encoding.Latin1.GetString(received.ToArray());
        }
    }

    public void Dispose() => _files.Dispose();
}
