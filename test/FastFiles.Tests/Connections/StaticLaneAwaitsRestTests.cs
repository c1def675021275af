using System.Text;
using FastFiles.Connections;
using Microsoft.AspNetCore.Server.Kestrel.Core;

namespace FastFiles.Tests.Connections;

/// <summary>
/// Whether a request the lane will not answer is one Kestrel would still be waiting for (the lane then keeps it under
/// its first deadline) or one to hand over now (complete, or possibly rejected by Kestrel at once).
/// </summary>
public sealed class StaticLaneAwaitsRestTests
{
    private static readonly LaneLimits Limits = LaneLimits.From(new KestrelServerLimits
    {
        MaxRequestLineSize = 100,
        MaxRequestHeadersTotalSize = 200,
        MaxRequestHeaderCount = 4,
    });

    [Theory]
    [InlineData("GET /a%20b")]
    [InlineData("GET /a HTTP/1.1\r")]
    [InlineData("HEAD /a?b=c/d HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: y\r\nX-Part")]
    [InlineData("GET /a HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\n\r")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nX: \tv w \r\n")]
    // Values Kestrel takes and then waits: a valid Content-Length (once); in the target any ASCII byte but NUL, and any
    // escape, undecodable ones included, but one of NUL in the path (each checked against Kestrel 10).
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\ncontent-length: 0\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nContent-Length:  12 \r\nX-Part")]
    [InlineData("GET /%41 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /a%2Eb?c=%20 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /%FF HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /%4 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /%+4 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /a#b HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /%C3%A9 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /a\u0001b HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /a?%00 HTTP/1.1\r\nHost: x\r\n")]
    // Bare LF line ends, spaces before the version, UTF-8 and control bytes in values, names Kestrel judges later,
    // Content-Length with a sign or leading zeros, a CR still waiting for its LF (each checked against Kestrel 10).
    [InlineData("GET /a HTTP/1.1\r\nHost: x\nX: y")]
    [InlineData("GET /a HTTP/1.1\n")]
    [InlineData("GET /a  HTTP/1.0\nHost: x\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nX: caf\u00c3\u00a9\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nX: a\u0001b\r\nX(: y\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nX\u007f: y\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nContent-Length: +1\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nContent-Length: -0\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nContent-Length:\t01 \r\n")]
    [InlineData("GET /a HTTP/1.1\r\nContent-Length: 9223372036854775807\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nX: y\r")]
    [InlineData("GET /a\r")]
    // Other methods and target forms Kestrel takes and then waits for (each checked against Kestrel 10): any token
    // method, case as sent; absolute-form that System.Uri takes (an escape of NUL included); OPTIONS *; CONNECT with an
    // authority of letters, digits and ":.-[]@".
    [InlineData("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n")]
    [InlineData("get /a HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("M-SEARCH /a HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("~!#$%&'*+-.^_`| /a HTTP/1.1\r\n")]
    [InlineData("GET http://x/a HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("HEAD https://x:443/a?b HTTP/1.1\r\n")]
    [InlineData("GET http://x HTTP/1.1\r\n")]
    [InlineData("GET http://[::1]/a HTTP/1.1\r\n")]
    [InlineData("GET http://u:p@x_y/a HTTP/1.1\r\n")]
    [InlineData("GET http://x/%00/%zz/a{b}|c\"d#f HTTP/1.1\r\n")]
    [InlineData("GET http://x:65535/../a HTTP/1.1\r\n")]
    [InlineData("POST http://x/a HTTP/1.0\r\n")]
    [InlineData("OPTIONS * HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("CONNECT host:80 HTTP/1.1\r\n")]
    [InlineData("CONNECT u@[::1]:80 HTTP/1.1\r\n")]
    [InlineData("CONNECT http://x/ HTTP/1.1\r\n")]
    public void Kestrel_would_wait_for_an_unfinished_plain_request(string request)
        => Assert.True(StaticLaneParser.AwaitsRest(Encoding.Latin1.GetBytes(request), Limits));

    [Theory]
    // Complete: Kestrel takes it from here.
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: y\r\n\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\n\n")]
    // Anything Kestrel may reject as soon as it has the line.
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nBad Header\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nX : y\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\n folded\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nX: caf\u00e9\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n")]
    [InlineData("GET /a HTTP/2.0\r\nHost: x\r\n")]
    [InlineData("GET /a\u00e9 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET  /a HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("G(T /a HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET %41 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /%00 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /a%%00 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /a?\u00e9 HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET * HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET foo HTTP/1.1\r\nHost: x\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\n\rX")]
    // Refused by Kestrel as soon as it has them: a NUL, a CR followed by anything but LF, UTF-8 in a name, a value that
    // is not UTF-8, bad Content-Length forms, whitespace before a colon or after the version.
    [InlineData("GET /a\u0000")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nX: a\rb")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nX\u00c3\u00a9: v\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nX: \u00c3\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nContent-Length: 1,1\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nContent-Length: +\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nX\t: y\r\n")]
    [InlineData("GET /a HTTP/1.1 \r\n")]
    [InlineData("GET /a HTTP/1.1\r\r\n")]
    // Over the limits: Kestrel's 414 or 431, at once.
    [InlineData("GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")]
    [InlineData("GET /a HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n")]
    [InlineData("GET /a HTTP/1.1\r\nHost: x\r\nX-Long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")]
    // Methods and forms Kestrel refuses at once (400, 405), each checked against Kestrel 10.
    [InlineData("G@T /a HTTP/1.1\r\n")]
    [InlineData("GET\t/a HTTP/1.1\r\n")]
    [InlineData(" GET /a HTTP/1.1\r\n")]
    [InlineData("GET /a\tHTTP/1.1\r\n")]
    [InlineData("GET /a\r\n")]
    [InlineData("GET\r\n")]
    [InlineData("options * HTTP/1.1\r\n")]
    [InlineData("OPTIONS ** HTTP/1.1\r\n")]
    [InlineData("CONNECT * HTTP/1.1\r\n")]
    [InlineData("connect host:80 HTTP/1.1\r\n")]
    [InlineData("CONNECT h_x:80 HTTP/1.1\r\n")]
    [InlineData("CONNECT h%41:80 HTTP/1.1\r\n")]
    [InlineData("CONNECT ho/st:80 HTTP/1.1\r\n")]
    [InlineData("GET host:80 HTTP/1.1\r\n")]
    [InlineData("GET HTTP://x/a HTTP/1.1\r\n")]
    [InlineData("GET Http://x/a HTTP/1.1\r\n")]
    [InlineData("GET ftp://x/a HTTP/1.1\r\n")]
    [InlineData("GET http:// HTTP/1.1\r\n")]
    [InlineData("GET https:// HTTP/1.1\r\n")]
    [InlineData("GET http:/// HTTP/1.1\r\n")]
    [InlineData("GET http:x/a HTTP/1.1\r\n")]
    [InlineData("GET http://x:65536/a HTTP/1.1\r\n")]
    [InlineData("GET http://[::1/a HTTP/1.1\r\n")]
    [InlineData("GET http://x%41/a HTTP/1.1\r\n")]
    [InlineData("GET http://x\\y/a HTTP/1.1\r\n")]
    [InlineData("GET http://\u0001/a HTTP/1.1\r\n")]
    [InlineData("GET http://x/\u00e9 HTTP/1.1\r\n")]
    [InlineData("GET *a HTTP/1.1\r\n")]
    [InlineData("GET a/b HTTP/1.1\r\n")]
    [InlineData("GET ? HTTP/1.1\r\n")]
    public void Complete_or_possibly_rejected_requests_go_to_Kestrel_now(string request)
        => Assert.False(StaticLaneParser.AwaitsRest(Encoding.Latin1.GetBytes(request), Limits));

    // A dribbled request is asked about after every read: its line, once found plain, is not judged again (an
    // absolute-form target is parsed by System.Uri from a string), only the header lines that follow.
    [Fact]
    public void A_request_line_found_plain_is_not_judged_again_on_later_reads()
    {
        const string Line = "GET http://x/a HTTP/1.1\r\n";
        int accepted = 0;
        Assert.True(StaticLaneParser.AwaitsRest(Encoding.Latin1.GetBytes(Line + "Host: x\r\n"), Limits, ref accepted));
        Assert.Equal(Line.Length, accepted);

        // The same position holding a line Kestrel refuses shows which verdict is used: the remembered one.
        byte[] refused = Encoding.Latin1.GetBytes("GET HTTP://x/a HTTP/1.1\r\nHost: x\r\nX: y\r\n");
        Assert.True(StaticLaneParser.AwaitsRest(refused, Limits, ref accepted));
        int fresh = 0;
        Assert.False(StaticLaneParser.AwaitsRest(refused, Limits, ref fresh));
        Assert.Equal(0, fresh);

        // Header lines are still judged on every read.
        Assert.False(StaticLaneParser.AwaitsRest(Encoding.Latin1.GetBytes(Line + "Host: x\r\nBad Header\r\n"), Limits, ref accepted));
    }
}
