using System.Globalization;
using System.Text;

namespace FastFiles.FunctionalTests.Connections;

/// <summary>
/// Reads HTTP/1.1 responses one after another from one connection (keep-alive, pipelining): exactly Content-Length
/// body bytes each, so a byte too many or too few shows up in the next response's status line.
/// </summary>
public sealed class HttpConnectionReader(Stream stream)
{
    private readonly byte[] _buffer = new byte[256 * 1024];
    private int _start;
    private int _end;

    /// <summary>Reads one response; <paramref name="head"/> requests have no body whatever their Content-Length says.</summary>
    public async Task<(int Status, Dictionary<string, string> Headers, byte[] Body)> ReadResponseAsync(bool head = false, CancellationToken cancellationToken = default)
    {
        int headerEnd;
        while ((headerEnd = _buffer.AsSpan(_start, _end - _start).IndexOf("\r\n\r\n"u8)) < 0)
        {
            await FillAsync(cancellationToken);
        }

        string text = Encoding.Latin1.GetString(_buffer, _start, headerEnd);
        _start += headerEnd + 4;
        string[] lines = text.Split("\r\n");
        int status = int.Parse(lines[0].Split(' ')[1], CultureInfo.InvariantCulture);
        var headers = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        foreach (string line in lines.Skip(1))
        {
            int colon = line.IndexOf(':', StringComparison.Ordinal);
            headers[line[..colon]] = line[(colon + 1)..].Trim();
        }

        long length = head || status is 204 or 304 || !headers.TryGetValue("Content-Length", out string? value)
            ? 0
            : long.Parse(value, CultureInfo.InvariantCulture);
        var body = new byte[length];
        long filled = 0;
        while (filled < length)
        {
            if (_start == _end)
            {
                await FillAsync(cancellationToken);
            }

            int n = (int)Math.Min(length - filled, _end - _start);
            _buffer.AsSpan(_start, n).CopyTo(body.AsSpan((int)filled));
            _start += n;
            filled += n;
        }

        return (status, headers, body);
    }

    /// <summary>Whether any byte is waiting beyond the responses read so far.</summary>
    public bool HasBufferedBytes => _end > _start;

    private async Task FillAsync(CancellationToken cancellationToken)
    {
        if (_start > 0)
        {
            _buffer.AsSpan(_start, _end - _start).CopyTo(_buffer);
            _end -= _start;
            _start = 0;
        }

        if (_end == _buffer.Length)
        {
            throw new InvalidOperationException("Response head too large for the test reader.");
        }

        int read = await stream.ReadAsync(_buffer.AsMemory(_end), cancellationToken);
        if (read == 0)
        {
            throw new EndOfStreamException("The server closed the connection.");
        }

        _end += read;
    }
}
