using System.Buffers.Binary;
using System.Net.Security;
using System.Net.Sockets;
using System.Text;
using FastFiles.FunctionalTests.Infrastructure;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// A minimal HTTP/2 client (over TLS, or h2c with prior knowledge for an http address) that writes frames by hand, so
/// tests can misbehave on purpose: stop reading the socket, never open flow-control windows, reset streams.
/// </summary>
internal sealed class RawHttp2Client : IAsyncDisposable
{
    public const byte Data = 0x0;
    public const byte Headers = 0x1;
    public const byte RstStream = 0x3;
    public const byte Settings = 0x4;
    public const byte Ping = 0x6;
    public const byte GoAway = 0x7;
    public const byte WindowUpdate = 0x8;

    private readonly TcpClient _tcp;
    private readonly Stream _ssl;
    private readonly string _authority;
    private readonly bool _tls;
    private readonly SemaphoreSlim _writeLock = new(1, 1);

    private RawHttp2Client(TcpClient tcp, Stream stream, string authority, bool tls)
    {
        _tcp = tcp;
        _ssl = stream;
        _authority = authority;
        _tls = tls;
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

        // Small frames (WINDOW_UPDATE) must not wait for Nagle behind the delayed ACK of the previous one.
        tcp.NoDelay = true;
        await tcp.ConnectAsync(https.Host, https.Port);
        RawHttp2Client client;
        if (https.Scheme == Uri.UriSchemeHttp)
        {
            client = new RawHttp2Client(tcp, tcp.GetStream(), $"{https.Host}:{https.Port}", tls: false);
        }
        else
        {
            client = await AuthenticateAsync(tcp, https);
        }

        await client._ssl.WriteAsync("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"u8.ToArray());
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

    private static async Task<RawHttp2Client> AuthenticateAsync(TcpClient tcp, Uri https)
    {
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

        return new RawHttp2Client(tcp, ssl, $"{https.Host}:{https.Port}", tls: true);
    }

    /// <summary>A GET's HEADERS frame (END_STREAM, END_HEADERS), as <see cref="SendRequestAsync"/> sends it, for a test that batches frames.</summary>
    public byte[] GetFrame(int streamId, string path, bool endStream = true, params (int NameIndex, string Value)[] headers)
    {
        var block = new List<byte> { 0x82, _tls ? (byte)0x87 : (byte)0x86 };
        AddLiteral(block, 4, path);
        AddLiteral(block, 1, _authority);
        foreach ((int nameIndex, string value) in headers)
        {
            AddLiteral(block, nameIndex, value);
        }

        return FrameBytes(Headers, (byte)((endStream ? 0x1 : 0) | 0x4), streamId, block.ToArray());
    }

    /// <summary>One frame's bytes: the 9-byte header and the payload.</summary>
    public static byte[] FrameBytes(byte type, byte flags, int streamId, byte[] payload)
    {
        byte[] frame = new byte[9 + payload.Length];
        frame[0] = (byte)(payload.Length >> 16);
        frame[1] = (byte)(payload.Length >> 8);
        frame[2] = (byte)payload.Length;
        frame[3] = type;
        frame[4] = flags;
        BinaryPrimitives.WriteUInt32BigEndian(frame.AsSpan(5), (uint)streamId);
        payload.CopyTo(frame, 9);
        return frame;
    }

    /// <summary>Writes <paramref name="frames"/> (whole frames, concatenated) in one write.</summary>
    public async Task SendRawAsync(byte[] frames)
    {
        await _writeLock.WaitAsync();
        try
        {
            await _ssl.WriteAsync(frames);
            await _ssl.FlushAsync();
        }
        finally
        {
            _writeLock.Release();
        }
    }

    /// <summary>Sends a PING (not an ACK) with <paramref name="data"/> as its 8-byte payload.</summary>
    public Task SendPingAsync(long data)
    {
        byte[] payload = new byte[8];
        BinaryPrimitives.WriteInt64BigEndian(payload, data);
        return WriteFrameAsync(Ping, 0, 0, payload);
    }

    /// <summary>Sends a GET with END_STREAM; header block uses static-table names and literal values only.</summary>
    public Task SendGetAsync(int streamId, string path) => SendRequestAsync(streamId, "GET", path);

    /// <summary>
    /// Sends a GET or HEAD with END_STREAM and extra headers given as (static-table name index, value), e.g. 50 range,
    /// 41 if-none-match.
    /// </summary>
    public Task SendRequestAsync(int streamId, string method, string path, params (int NameIndex, string Value)[] headers)
    {
        var block = new List<byte>();
        if (method == "GET")
        {
            block.Add(0x82);                         // :method GET
        }
        else
        {
            AddLiteral(block, 2, method);            // :method, no static entry for HEAD
        }

        block.Add(_tls ? (byte)0x87 : (byte)0x86);   // :scheme https / http
        AddLiteral(block, 4, path);                  // :path
        AddLiteral(block, 1, _authority);            // :authority
        foreach ((int nameIndex, string value) in headers)
        {
            AddLiteral(block, nameIndex, value);
        }

        return WriteFrameAsync(Headers, 0x1 | 0x4, streamId, block.ToArray());
    }

    /// <summary>Sends GOAWAY naming <paramref name="lastStreamId"/> with NO_ERROR.</summary>
    public Task SendGoAwayAsync(int lastStreamId)
    {
        byte[] payload = new byte[8];
        BinaryPrimitives.WriteUInt32BigEndian(payload, (uint)lastStreamId);
        return WriteFrameAsync(GoAway, 0, 0, payload);
    }

    /// <summary>
    /// The :status of a response HEADERS block (no CONTINUATION), decoded with this connection's HPACK dynamic table, which
    /// every block must pass through in order. Kestrel never Huffman-codes what it sends.
    /// </summary>
    public int DecodeStatus(byte[] block)
    {
        int status = 0;
        int i = 0;
        while (i < block.Length)
        {
            byte first = block[i];
            if ((first & 0x80) != 0)
            {
                status = StatusOr(Entry(ReadInteger(block, ref i, 7)), status);
            }
            else if ((first & 0xE0) == 0x20)
            {
                _dynamicLimit = ReadInteger(block, ref i, 5);
                Evict();
            }
            else
            {
                bool indexing = (first & 0xC0) == 0x40;
                int index = ReadInteger(block, ref i, indexing ? 6 : 4);
                string name = index == 0 ? ReadString(block, ref i) : Entry(index).Name;
                var field = (name, ReadString(block, ref i));
                if (indexing)
                {
                    _dynamic.Insert(0, field);
                    Evict();
                }

                status = StatusOr(field, status);
            }
        }

        return status;
    }

    private readonly List<(string Name, string Value)> _dynamic = [];
    private int _dynamicLimit = 4096;

    private static int StatusOr((string Name, string Value) field, int status)
        => field.Name == ":status" ? int.Parse(field.Value, System.Globalization.CultureInfo.InvariantCulture) : status;

    private (string Name, string Value) Entry(int index)
    {
        string[] statuses = ["200", "204", "206", "304", "400", "404", "500"];
        return index switch
        {
            >= 8 and <= 14 => (":status", statuses[index - 8]),
            < 62 => ("static " + index, string.Empty),
            _ => _dynamic[index - 62],
        };
    }

    private void Evict()
    {
        while (_dynamic.Sum(e => e.Name.Length + e.Value.Length + 32) > _dynamicLimit)
        {
            _dynamic.RemoveAt(_dynamic.Count - 1);
        }
    }

    private static int ReadInteger(byte[] block, ref int i, int prefixBits)
    {
        int max = (1 << prefixBits) - 1;
        int value = block[i++] & max;
        if (value < max)
        {
            return value;
        }

        int shift = 0;
        byte next;
        do
        {
            next = block[i++];
            value += (next & 0x7F) << shift;
            shift += 7;
        }
        while ((next & 0x80) != 0);
        return value;
    }

    private static string ReadString(byte[] block, ref int i)
    {
        if ((block[i] & 0x80) != 0)
        {
            throw new NotSupportedException("A Huffman-coded string.");
        }

        int length = ReadInteger(block, ref i, 7);
        string value = Encoding.ASCII.GetString(block, i, length);
        i += length;
        return value;
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

    private Task WriteFrameAsync(byte type, byte flags, int streamId, byte[] payload) => SendRawAsync(FrameBytes(type, flags, streamId, payload));

    private static void AddLiteral(List<byte> block, int nameIndex, string value)
    {
        // Literal header field without indexing, indexed name (RFC 7541 6.2.2: a 4-bit prefix integer), no Huffman;
        // values stay under 127 bytes.
        byte[] bytes = Encoding.ASCII.GetBytes(value);
        if (nameIndex < 15)
        {
            block.Add((byte)nameIndex);
        }
        else
        {
            block.Add(15);
            block.Add((byte)(nameIndex - 15));
        }

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
