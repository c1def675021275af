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
}
