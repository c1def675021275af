using System.Buffers.Binary;
using System.Net.Security;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// A minimal HTTP/2-over-TLS client that writes frames by hand, so tests can misbehave on purpose: stop reading the
/// socket, never open flow-control windows, reset streams.
/// </summary>
internal sealed class RawHttp2Client : IAsyncDisposable
{
    public const byte Data = 0x0;
    public const byte Headers = 0x1;
    public const byte RstStream = 0x3;
    public const byte Settings = 0x4;
    public const byte GoAway = 0x7;
    public const byte WindowUpdate = 0x8;

    private readonly TcpClient _tcp;
    private readonly SslStream _ssl;
    private readonly string _authority;
    private readonly SemaphoreSlim _writeLock = new(1, 1);

    private RawHttp2Client(TcpClient tcp, SslStream ssl, string authority)
    {
        _tcp = tcp;
        _ssl = ssl;
        _authority = authority;
    }

    /// <param name="initialWindowSize">SETTINGS_INITIAL_WINDOW_SIZE for the server's streams.</param>
    /// <param name="connectionWindowIncrement">A WINDOW_UPDATE on stream 0 right after the preface, or 0 for none.</param>
    /// <param name="receiveBufferSize">The client socket's receive buffer, set before connecting so TCP advertises a small window.</param>
    public static async Task<RawHttp2Client> ConnectAsync(Uri https, uint initialWindowSize, uint connectionWindowIncrement, int? receiveBufferSize = null)
    {
        var tcp = new TcpClient(AddressFamily.InterNetwork);
        if (receiveBufferSize is { } size)
        {
            tcp.ReceiveBufferSize = size;
        }

        await tcp.ConnectAsync(https.Host, https.Port);
        var ssl = new SslStream(tcp.GetStream());
        await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
        {
            TargetHost = "localhost",
            ApplicationProtocols = [SslApplicationProtocol.Http2],
            RemoteCertificateValidationCallback = (_, cert, _, _) => cert is not null && cert.GetCertHashString() == TestCertificate.Instance.GetCertHashString(),
        });
        if (ssl.NegotiatedApplicationProtocol != SslApplicationProtocol.Http2)
        {
            throw new InvalidOperationException("The server did not negotiate h2.");
        }

        var client = new RawHttp2Client(tcp, ssl, $"{https.Host}:{https.Port}");
        await ssl.WriteAsync("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"u8.ToArray());
        byte[] settings = new byte[6];
        BinaryPrimitives.WriteUInt16BigEndian(settings, 0x4);
        BinaryPrimitives.WriteUInt32BigEndian(settings.AsSpan(2), initialWindowSize);
        await client.WriteFrameAsync(Settings, 0, 0, settings);
        if (connectionWindowIncrement > 0)
        {
            await client.SendWindowUpdateAsync(0, connectionWindowIncrement);
        }

        return client;
    }

    /// <summary>Sends a GET with END_STREAM; header block uses static-table names and literal values only.</summary>
    public Task SendGetAsync(int streamId, string path)
    {
        var block = new List<byte> { 0x82, 0x87 }; // :method GET, :scheme https
        AddLiteral(block, 4, path);                  // :path
        AddLiteral(block, 1, _authority);            // :authority
        return WriteFrameAsync(Headers, 0x1 | 0x4, streamId, block.ToArray());
    }

    public Task SendRstStreamAsync(int streamId, uint errorCode = 0x8)
    {
        byte[] payload = new byte[4];
        BinaryPrimitives.WriteUInt32BigEndian(payload, errorCode);
        return WriteFrameAsync(RstStream, 0, streamId, payload);
    }

    public Task SendWindowUpdateAsync(int streamId, uint increment)
    {
        byte[] payload = new byte[4];
        BinaryPrimitives.WriteUInt32BigEndian(payload, increment);
        return WriteFrameAsync(WindowUpdate, 0, streamId, payload);
    }

    public Task SendSettingsAckAsync() => WriteFrameAsync(Settings, 0x1, 0, []);

    /// <summary>Reads one frame; null at end of stream. Throws if the connection is reset.</summary>
    public async Task<Frame?> ReadFrameAsync(CancellationToken cancellationToken = default)
    {
        byte[] header = new byte[9];
        if (!await ReadExactlyOrEofAsync(header, cancellationToken))
        {
            return null;
        }

        int length = (header[0] << 16) | (header[1] << 8) | header[2];
        byte[] payload = new byte[length];
        if (!await ReadExactlyOrEofAsync(payload, cancellationToken))
        {
            return null;
        }

        int streamId = (int)(BinaryPrimitives.ReadUInt32BigEndian(header.AsSpan(5)) & 0x7FFFFFFF);
        return new Frame(header[3], header[4], streamId, payload);
    }

    private async Task<bool> ReadExactlyOrEofAsync(byte[] buffer, CancellationToken cancellationToken)
    {
        int read = 0;
        while (read < buffer.Length)
        {
            int n = await _ssl.ReadAsync(buffer.AsMemory(read), cancellationToken);
            if (n == 0)
            {
                return false;
            }

            read += n;
        }

        return true;
    }

    private async Task WriteFrameAsync(byte type, byte flags, int streamId, byte[] payload)
    {
        byte[] frame = new byte[9 + payload.Length];
        frame[0] = (byte)(payload.Length >> 16);
        frame[1] = (byte)(payload.Length >> 8);
        frame[2] = (byte)payload.Length;
        frame[3] = type;
        frame[4] = flags;
        BinaryPrimitives.WriteUInt32BigEndian(frame.AsSpan(5), (uint)streamId);
        payload.CopyTo(frame, 9);
        await _writeLock.WaitAsync();
        try
        {
            await _ssl.WriteAsync(frame);
            await _ssl.FlushAsync();
        }
        finally
        {
            _writeLock.Release();
        }
    }

    private static void AddLiteral(List<byte> block, int nameIndex, string value)
    {
        // Literal header field without indexing, indexed name (RFC 7541 6.2.2), no Huffman; values stay under 127 bytes.
        byte[] bytes = Encoding.ASCII.GetBytes(value);
        block.Add((byte)nameIndex);
        block.Add((byte)bytes.Length);
        block.AddRange(bytes);
    }

    /// <summary>Closes the socket with SO_LINGER 0, so the server sees a reset.</summary>
    public void ResetSocket()
    {
        _tcp.Client.LingerState = new LingerOption(true, 0);
        _tcp.Client.Close();
    }

    public async ValueTask DisposeAsync()
    {
        await _ssl.DisposeAsync();
        _tcp.Dispose();
        _writeLock.Dispose();
    }

    internal sealed record Frame(byte Type, byte Flags, int StreamId, byte[] Payload)
    {
        public bool EndStream => (Flags & 0x1) != 0;
    }
}
