using System.Net.Sockets;
using System.Text;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>A response read off a raw socket: status, headers, and whatever body arrived.</summary>
public sealed class RawResponse
{
    public int Status { get; init; }

    public Dictionary<string, string> Headers { get; init; } = new(StringComparer.OrdinalIgnoreCase);

    public byte[] Body { get; init; } = [];

    /// <summary>The Content-Length header, if any.</summary>
    public long? ContentLength => Headers.TryGetValue("Content-Length", out string? v) ? long.Parse(v, System.Globalization.CultureInfo.InvariantCulture) : null;
}

/// <summary>
/// How a raw client reads: its receive buffer (small keeps the advertised window small), bytes per read, and a pause
/// after every <paramref name="PauseEvery"/> reads (0: none), after waiting <paramref name="StartDelay"/> before the first.
/// The pauses only let the server's socket buffer fill; nothing is asserted about time.
/// </summary>
public sealed record ReadPace(int? ReceiveBufferSize, int ReadSize, int PauseEvery = 0, TimeSpan Pause = default, TimeSpan StartDelay = default)
{
    /// <summary>A default socket read 64 KiB at a time without pauses.</summary>
    public static ReadPace Fast { get; } = new(null, 64 * 1024);
}

/// <summary>
/// HTTP/1.1 over a bare socket, so requests reach Kestrel byte for byte (no client normalizes dot segments,
/// percent-encoding or backslashes away).
/// </summary>
public static class RawHttp
{
    public static async Task<Socket> ConnectAsync(Uri baseUri, int? receiveBufferSize = null)
    {
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        if (receiveBufferSize is int size)
        {
            // Set before connecting so the advertised window stays small.
            socket.ReceiveBufferSize = size;
        }

        await socket.ConnectAsync(baseUri.Host, baseUri.Port);
        return socket;
    }

    /// <summary>
    /// Sends <paramref name="requests"/> in one write on a new connection and reads at <paramref name="pace"/> until the
    /// server closes it (bounded by <paramref name="within"/>); returns every byte read.
    /// </summary>
    public static async Task<byte[]> ExchangeToCloseAsync(Uri address, byte[] requests, ReadPace pace, TimeSpan within)
    {
        using Socket socket = await ConnectAsync(address, pace.ReceiveBufferSize);
        await socket.SendAsync(requests);
        using var received = new MemoryStream();
        var chunk = new byte[pace.ReadSize];
        using var timeout = new CancellationTokenSource(within);
        if (pace.StartDelay > TimeSpan.Zero)
        {
            await Task.Delay(pace.StartDelay, timeout.Token);
        }

        int reads = 0;
        int read;
        while ((read = await socket.ReceiveAsync(chunk, SocketFlags.None, timeout.Token)) > 0)
        {
            received.Write(chunk, 0, read);
            if (pace.PauseEvery > 0 && ++reads % pace.PauseEvery == 0)
            {
                await Task.Delay(pace.Pause, timeout.Token);
            }
        }

        return received.ToArray();
    }

    /// <summary>Sends <c>GET target</c> (or <paramref name="method"/>) with Connection: close and reads the whole response.</summary>
    public static async Task<RawResponse> SendAsync(Uri baseUri, string target, string method = "GET", string? extraHeaders = null)
    {
        using Socket socket = await ConnectAsync(baseUri);
        string request = $"{method} {target} HTTP/1.1\r\nHost: {baseUri.Authority}\r\n{extraHeaders}Connection: close\r\n\r\n";
        await socket.SendAsync(Encoding.Latin1.GetBytes(request));
        using var stream = new NetworkStream(socket, ownsSocket: false);
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        (int status, Dictionary<string, string> headers, byte[] leftover) = await ReadHeadAsync(stream, timeout.Token);
        var body = new MemoryStream();
        body.Write(leftover);
        if (method != "HEAD")
        {
            await ReadToEndAsync(stream, body, timeout.Token);
        }

        return new RawResponse { Status = status, Headers = headers, Body = body.ToArray() };
    }

    /// <summary>
    /// Sends one keep-alive request on an open connection and reads its response: the head, then exactly Content-Length
    /// body bytes (none for HEAD). Throws <see cref="IOException"/> when the connection ends first.
    /// </summary>
    public static async Task<RawResponse> ExchangeAsync(Stream stream, string target, CancellationToken cancellationToken, string method = "GET", string? extraHeaders = null)
    {
        await stream.WriteAsync(Encoding.Latin1.GetBytes($"{method} {target} HTTP/1.1\r\nHost: x\r\n{extraHeaders}\r\n"), cancellationToken);
        (int status, Dictionary<string, string> headers, byte[] leftover) = await ReadHeadAsync(stream, cancellationToken);
        long length = method == "HEAD" || !headers.TryGetValue("Content-Length", out string? value) ? 0 : long.Parse(value, System.Globalization.CultureInfo.InvariantCulture);
        var body = new byte[length];
        leftover.AsSpan(0, (int)Math.Min(leftover.Length, length)).CopyTo(body);
        int have = (int)Math.Min(leftover.Length, length);
        await stream.ReadExactlyAsync(body.AsMemory(have), cancellationToken);
        return new RawResponse { Status = status, Headers = headers, Body = body };
    }

    /// <summary>Reads the status line and headers; returns any body bytes that arrived with them.</summary>
    public static async Task<(int Status, Dictionary<string, string> Headers, byte[] Leftover)> ReadHeadAsync(Stream stream, CancellationToken cancellationToken)
    {
        var buffer = new List<byte>(4096);
        var chunk = new byte[4096];
        int end;
        while ((end = IndexOfHeaderEnd(buffer)) < 0)
        {
            int read = await stream.ReadAsync(chunk, cancellationToken);
            if (read == 0)
            {
                throw new IOException("The connection closed before the response headers ended.");
            }

            buffer.AddRange(chunk.AsSpan(0, read));
        }

        string head = Encoding.Latin1.GetString(buffer.GetRange(0, end).ToArray());
        string[] lines = head.Split("\r\n");
        int status = int.Parse(lines[0].Split(' ')[1], System.Globalization.CultureInfo.InvariantCulture);
        var headers = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        foreach (string line in lines.Skip(1))
        {
            int colon = line.IndexOf(':', StringComparison.Ordinal);
            string name = line[..colon];
            string value = line[(colon + 1)..].Trim();
            headers[name] = headers.TryGetValue(name, out string? existing) ? existing + ", " + value : value;
        }

        return (status, headers, buffer.GetRange(end + 4, buffer.Count - end - 4).ToArray());
    }

    /// <summary>Reads until the peer closes or resets the connection.</summary>
    public static async Task ReadToEndAsync(Stream stream, MemoryStream into, CancellationToken cancellationToken)
    {
        var chunk = new byte[64 * 1024];
        try
        {
            int read;
            while ((read = await stream.ReadAsync(chunk, cancellationToken)) > 0)
            {
                into.Write(chunk, 0, read);
            }
        }
        catch (IOException)
        {
            // A reset (abort) ends the body as surely as a FIN.
        }
    }

    /// <summary>Where the blank line ending a response head starts in <paramref name="buffer"/>, or -1.</summary>
    public static int IndexOfHeaderEnd(List<byte> buffer)
    {
        for (int i = 3; i < buffer.Count; i++)
        {
            if (buffer[i - 3] == '\r' && buffer[i - 2] == '\n' && buffer[i - 1] == '\r' && buffer[i] == '\n')
            {
                return i - 3;
            }
        }

        return -1;
    }

    /// <summary>
    /// The data of a chunked body at the start of <paramref name="chunked"/>, as far as it arrived (a cut chunk gives its
    /// bytes so far). <paramref name="consumed"/>: the bytes it took, through the last chunk's blank line when it came
    /// (no trailers are expected).
    /// </summary>
    public static byte[] Dechunk(ReadOnlySpan<byte> chunked, out int consumed)
    {
        var data = new MemoryStream();
        int at = 0;
        while (at < chunked.Length)
        {
            int lineEnd = chunked[at..].IndexOf("\r\n"u8);
            if (lineEnd < 0)
            {
                break;
            }

            int size = int.Parse(chunked.Slice(at, lineEnd), System.Globalization.NumberStyles.HexNumber, System.Globalization.CultureInfo.InvariantCulture);
            at += lineEnd + 2;
            if (size == 0)
            {
                at = Math.Min(at + 2, chunked.Length);
                break;
            }

            int take = Math.Min(size, chunked.Length - at);
            data.Write(chunked.Slice(at, take));
            at = Math.Min(at + take + 2, chunked.Length);
        }

        consumed = at;
        return data.ToArray();
    }
}
