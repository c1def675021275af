using System.Buffers;
using System.Buffers.Text;
using System.Text.Unicode;

namespace FastFiles.Connections;

/// <summary>Why the static lane gave a connection to Kestrel (the <c>fastfiles.lane.reason</c> metric tag).</summary>
internal enum HandOffReason
{
    /// <summary>The bytes read so far end inside a request: Kestrel's own header timeout then applies to the rest.</summary>
    Partial,

    /// <summary>Not GET or HEAD.</summary>
    Method,

    /// <summary>Not HTTP/1.1.</summary>
    Version,

    /// <summary>A target the lane does not map itself: absolute-form, query, percent-encoding, dot segments, "//", odd bytes.</summary>
    Target,

    /// <summary>A directory (trailing slash) without a default file the lane serves: listings and the rest stay with the app.</summary>
    Directory,

    /// <summary>Anything not strictly <c>name: value CRLF</c>: bare LF, obs-fold, control bytes, odd header names.</summary>
    Malformed,

    /// <summary>Content-Length, Transfer-Encoding, Expect, Upgrade, or a Connection option other than keep-alive/close.</summary>
    Framing,

    /// <summary>A header whose meaning the lane does not evaluate (If-Match, If-Range, Authorization, ...), or a repeated one.</summary>
    Header,

    /// <summary>Missing, repeated or unusual Host.</summary>
    Host,

    /// <summary>Over (or near) a Kestrel request limit.</summary>
    Limits,

    /// <summary>Not under a lane root, or no file there that the lane can serve.</summary>
    NotFound,

    /// <summary>A body the cache does not hold (files over <c>MaxCachedFileSize</c>).</summary>
    Uncached,
}

/// <summary>
/// The request fields the lane evaluates, as slices of the received bytes (nothing is materialized). A field that
/// is absent is empty; present fields are never empty (an empty value hands off).
/// </summary>
internal ref struct LaneRequest
{
    public bool IsHead;
    public bool Close;
    public ReadOnlySpan<byte> Path;
    public ReadOnlySpan<byte> Host;
    public ReadOnlySpan<byte> AcceptEncoding;
    public ReadOnlySpan<byte> IfNoneMatch;
    public ReadOnlySpan<byte> IfModifiedSince;
    public ReadOnlySpan<byte> Range;
}

/// <summary>
/// A deliberately narrow HTTP/1.1 request parser (RFC 9112 2-5): <c>GET|HEAD SP origin-form SP HTTP/1.1 CRLF</c>,
/// then <c>token ":" OWS value OWS CRLF</c> lines and an empty line, nothing else. Everything it does not accept is
/// reported as a hand-off, so Kestrel's parser decides it from the untouched bytes: the lane never reads a request
/// boundary Kestrel would read differently (no body framing is ever accepted, and only CRLF ends a line).
/// </summary>
internal static class StaticLaneParser
{
    // The longest field value the lane evaluates; longer ones hand off (they are widened on the stack).
    public const int MaxEvaluatedValueLength = 512;

    // The longest path the lane maps; longer ones hand off.
    public const int MaxPathLength = 1024;

    private const byte CR = (byte)'\r';
    private const byte LF = (byte)'\n';

    // RFC 9110 5.6.2 tchar.
    private static readonly bool[] Token = BuildTable("!#$%&'*+-.^_`|~");

    // The path bytes the lane maps as they are: unreserved and sub-delims, ':', '@' and '/' (RFC 3986 3.3), without
    // '%' (Kestrel would decode it) and without the query/fragment delimiters.
    private static readonly bool[] PathByte = BuildTable("-._~!$&'()*+,;=:@/");

    // The bytes Kestrel takes in a CONNECT authority-form target (host, port, IP literal brackets, userinfo).
    private static readonly SearchValues<byte> AuthorityBytes =
        SearchValues.Create(":.-[]@0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"u8);

    // Kestrel takes a bare LF as a line's end unless this switch is set (read once, as Kestrel reads it per server).
    private static readonly bool LineFeedTerminators =
        !(AppContext.TryGetSwitch("Microsoft.AspNetCore.Server.Kestrel.DisableHttp1LineFeedTerminators", out bool disabled) && disabled);

    /// <summary>
    /// Parses one request from the start of <paramref name="input"/>. Returns true with <paramref name="length"/> set
    /// to the request's size when the lane may answer it; false with <paramref name="reason"/> otherwise.
    /// </summary>
    public static bool TryParse(ReadOnlySpan<byte> input, in LaneLimits limits, out LaneRequest request, out int length, out HandOffReason reason)
    {
        if (TryParseCore(input, limits, out request, out length, out reason, out int headersStart))
        {
            return true;
        }

        // Kestrel rejects a request line or a header section as soon as the bytes it holds pass the limit, finished or
        // not (414/431): an unfinished request that long is its to answer, never one for the lane to wait for.
        if (reason == HandOffReason.Partial
            && (headersStart < 0 ? input.Length >= limits.MaxRequestLineSize : input.Length - headersStart >= limits.MaxRequestHeadersTotalSize))
        {
            reason = HandOffReason.Limits;
        }

        return false;
    }

    /// <summary>
    /// For a request the lane will not answer (<see cref="TryParse"/> gave a reason other than
    /// <see cref="HandOffReason.Partial"/>): true when its header section has not ended and what has arrived is plainly
    /// well formed and within the limits, so Kestrel given these bytes would only wait for more. A request dribbled in
    /// past that point waits in the lane, under the header deadline its first bytes started, rather than going to Kestrel,
    /// whose header timer would start afresh. False (hand off now) when the header section is complete, or anything in
    /// it may be something Kestrel rejects at once (its 400, 414 or 431 must come from Kestrel, and without delay).
    /// </summary>
    public static bool AwaitsRest(ReadOnlySpan<byte> input, in LaneLimits limits)
    {
        int acceptedLine = 0;
        return AwaitsRest(input, limits, ref acceptedLine);
    }

    /// <summary>
    /// <see cref="AwaitsRest(ReadOnlySpan{byte}, in LaneLimits)"/> for a request asked about read after read:
    /// <paramref name="acceptedLine"/> (0 at the request's first bytes) holds the length of the request line already
    /// found plain, so a dribbled request does not have its line (an absolute-form target parsed by System.Uri, up to
    /// MaxRequestLineSize) judged again on every read.
    /// </summary>
    public static bool AwaitsRest(ReadOnlySpan<byte> input, in LaneLimits limits, ref int acceptedLine)
    {
        // Kestrel reads a request line only once its LF is there, but stops at a NUL at once.
        int lineEnd = input.IndexOf(LF);
        if (lineEnd < 0)
        {
            return input.Length < limits.MaxRequestLineSize && input.IndexOf((byte)0) < 0;
        }

        if (lineEnd + 1 > limits.MaxRequestLineSize)
        {
            return false;
        }

        if (acceptedLine != lineEnd + 1)
        {
            if (!IsPlainRequestLine(input[..(lineEnd + 1)]))
            {
                return false;
            }

            acceptedLine = lineEnd + 1;
        }

        int headersStart = lineEnd + 1;
        int pos = headersStart;
        int count = 0;
        bool sawContentLength = false;
        while (true)
        {
            ReadOnlySpan<byte> rest = input[pos..];
            int next = rest.IndexOf(LF);
            if (next < 0)
            {
                // An unfinished line: Kestrel waits for its LF, within the header section's limit, unless it holds a CR
                // followed by something (then not LF): that it rejects at once.
                int cr = rest.IndexOf(CR);
                return input.Length - headersStart < limits.MaxRequestHeadersTotalSize && !(cr >= 0 && cr + 1 < rest.Length);
            }

            // The empty line (the header section is complete), or a line Kestrel may refuse as soon as it has it.
            if (next == 0 || rest[0] == CR || ++count > limits.MaxRequestHeaderCount || !IsPlainFieldLine(rest[..(next + 1)], ref sawContentLength))
            {
                return false;
            }

            pos += next + 1;
            if (pos - headersStart >= limits.MaxRequestHeadersTotalSize)
            {
                return false;
            }
        }
    }

    // A request line Kestrel takes and then waits for the header section (checked against Kestrel 10, each form and
    // byte class dribbled): any token method, one space, a target, one or more spaces, HTTP/1.1 or HTTP/1.0. It refuses
    // at once a target holding NUL or a byte outside ASCII (it reads the target as ASCII), and, by form (RFC 9112 3.2):
    // an origin-form path whose escapes decode to NUL (any other escape or byte it takes, undecodable ones included); an
    // absolute-form target ("http://" or "https://", as written) that System.Uri does not take; an asterisk-form other
    // than OPTIONS *; an authority-form outside CONNECT or with a byte outside letters, digits and ":.-[]@".
    private static bool IsPlainRequestLine(ReadOnlySpan<byte> line)
    {
        int methodEnd = line.IndexOf((byte)' ');
        if (methodEnd <= 0 || !IsToken(line[..methodEnd]))
        {
            return false;
        }

        ReadOnlySpan<byte> method = line[..methodEnd];
        ReadOnlySpan<byte> rest = line[(methodEnd + 1)..];
        int space = rest.IndexOf((byte)' ');
        if (space <= 0)
        {
            return false;
        }

        ReadOnlySpan<byte> target = rest[..space];
        if (target.IndexOfAnyInRange((byte)0x80, (byte)0xFF) >= 0 || target.IndexOf((byte)0) >= 0 || !IsTakenTarget(method, target))
        {
            return false;
        }

        // Kestrel skips further spaces before the version, and takes a bare LF unless DisableHttp1LineFeedTerminators.
        ReadOnlySpan<byte> version = rest[(space + 1)..].TrimStart((byte)' ');
        ReadOnlySpan<byte> end = version.Length > 8 ? version[8..] : default;
        return (version.StartsWith("HTTP/1.1"u8) || version.StartsWith("HTTP/1.0"u8))
            && (end.SequenceEqual("\r\n"u8) || (LineFeedTerminators && end.SequenceEqual("\n"u8)));
    }

    // A non-empty ASCII target (no NUL) in a form Kestrel accepts for this method; see IsPlainRequestLine.
    private static bool IsTakenTarget(ReadOnlySpan<byte> method, ReadOnlySpan<byte> target)
    {
        if (target[0] == (byte)'/')
        {
            int query = target.IndexOf((byte)'?');
            return (query < 0 ? target : target[..query]).IndexOf("%00"u8) < 0;
        }

        if (target.SequenceEqual("*"u8))
        {
            return method.SequenceEqual("OPTIONS"u8);
        }

        if (target.StartsWith("http://"u8) || target.StartsWith("https://"u8))
        {
            // Kestrel's own test for this form. A string only for a dribbled absolute-form request, never on the lane's
            // path for the requests it answers.
            return Uri.TryCreate(System.Text.Encoding.ASCII.GetString(target), UriKind.Absolute, out _);
        }

        return method.SequenceEqual("CONNECT"u8) && target.IndexOfAnyExcept(AuthorityBytes) < 0;
    }

    // A field line Kestrel takes as it arrives and then waits for the next (checked against Kestrel 10 with every byte
    // value in a name and in a value, and the Content-Length forms below): it refuses at once a NUL, a CR before the end,
    // an empty name, whitespace or a byte outside ASCII in the name, a value that is not valid UTF-8 (with the default
    // RequestHeaderEncodingSelector; another selector only makes the lane hand off sooner), and a Content-Length that
    // is repeated, negative, too large or not a number (it takes a sign, leading zeros and whitespace around it). Any
    // other byte it takes here, control bytes and token-breaking names included, and judges later.
    private static bool IsPlainFieldLine(ReadOnlySpan<byte> line, ref bool sawContentLength)
    {
        ReadOnlySpan<byte> content;
        if (line.Length >= 2 && line[^2] == CR)
        {
            content = line[..^2];
        }
        else if (LineFeedTerminators)
        {
            content = line[..^1];
        }
        else
        {
            return false;
        }

        int colon = content.IndexOf((byte)':');
        if (colon <= 0 || content.IndexOfAny((byte)0, CR) >= 0)
        {
            return false;
        }

        ReadOnlySpan<byte> name = content[..colon];
        ReadOnlySpan<byte> value = content[(colon + 1)..];
        if (name.IndexOfAny((byte)' ', (byte)'\t') >= 0 || name.IndexOfAnyInRange((byte)0x80, (byte)0xFF) >= 0 || !Utf8.IsValid(value))
        {
            return false;
        }

        if (Is(name, "content-length"u8))
        {
            ReadOnlySpan<byte> number = value.Trim(" \t"u8);
            if (sawContentLength || !Utf8Parser.TryParse(number, out long contentLength, out int parsed) || parsed != number.Length || contentLength < 0)
            {
                return false;
            }

            sawContentLength = true;
        }

        return true;
    }

    private static bool TryParseCore(
        ReadOnlySpan<byte> input, in LaneLimits limits, out LaneRequest request, out int length, out HandOffReason reason, out int headersStart)
    {
        request = default;
        length = 0;
        headersStart = -1;

        // Request line (RFC 9112 3).
        int methodLength;
        if (input.StartsWith("GET "u8))
        {
            methodLength = 4;
        }
        else if (input.StartsWith("HEAD "u8))
        {
            methodLength = 5;
            request.IsHead = true;
        }
        else
        {
            reason = input.Length < 5 && ("GET "u8.StartsWith(input) || "HEAD "u8.StartsWith(input)) ? HandOffReason.Partial : HandOffReason.Method;
            return false;
        }

        int pos = methodLength;
        if (pos >= input.Length)
        {
            reason = HandOffReason.Partial;
            return false;
        }

        if (input[pos] != (byte)'/')
        {
            // Absolute-form, authority-form, asterisk-form, or a second space.
            reason = HandOffReason.Target;
            return false;
        }

        int pathStart = pos;
        while (pos < input.Length && input[pos] != (byte)' ')
        {
            byte b = input[pos];
            if (b >= 128 || !PathByte[b])
            {
                reason = HandOffReason.Target;
                return false;
            }

            pos++;
        }

        if (pos - pathStart > MaxPathLength)
        {
            reason = HandOffReason.Limits;
            return false;
        }

        if (pos >= input.Length)
        {
            reason = HandOffReason.Partial;
            return false;
        }

        ReadOnlySpan<byte> path = input[pathStart..pos];
        pos++;
        ReadOnlySpan<byte> version = "HTTP/1.1\r\n"u8;
        ReadOnlySpan<byte> rest = input[pos..];
        if (!rest.StartsWith(version))
        {
            reason = rest.Length < version.Length && version.StartsWith(rest) ? HandOffReason.Partial : HandOffReason.Version;
            return false;
        }

        pos += version.Length;
        if (pos > limits.MaxRequestLineSize)
        {
            reason = HandOffReason.Limits;
            return false;
        }

        // Dot segments and empty segments are rewritten by Kestrel. A trailing slash names a directory: its first default
        // file, when the root has one (else a hand-off as not found).
        if (path.IndexOf("//"u8) >= 0 || path.IndexOf("/."u8) >= 0)
        {
            reason = HandOffReason.Target;
            return false;
        }

        request.Path = path;

        // Header fields (RFC 9112 5).
        headersStart = pos;
        int count = 0;
        bool sawHost = false, sawConnection = false;
        while (true)
        {
            if (pos - headersStart > limits.MaxRequestHeadersTotalSize)
            {
                reason = HandOffReason.Limits;
                return false;
            }

            if (pos + 1 >= input.Length)
            {
                reason = pos < input.Length && input[pos] != CR && !IsTokenByte(input[pos]) ? HandOffReason.Malformed : HandOffReason.Partial;
                return false;
            }

            if (input[pos] == CR)
            {
                if (input[pos + 1] != LF)
                {
                    reason = HandOffReason.Malformed;
                    return false;
                }

                pos += 2;
                break;
            }

            if (++count > limits.MaxRequestHeaderCount)
            {
                reason = HandOffReason.Limits;
                return false;
            }

            int nameStart = pos;
            while (pos < input.Length && IsTokenByte(input[pos]))
            {
                pos++;
            }

            if (pos >= input.Length)
            {
                reason = HandOffReason.Partial;
                return false;
            }

            // No whitespace before the colon (RFC 9112 5.1), no empty name, no obs-fold (a line starting with SP/HTAB).
            if (input[pos] != (byte)':' || pos == nameStart)
            {
                reason = HandOffReason.Malformed;
                return false;
            }

            ReadOnlySpan<byte> name = input[nameStart..pos];
            pos++;
            while (pos < input.Length && input[pos] is (byte)' ' or (byte)'\t')
            {
                pos++;
            }

            int valueStart = pos;
            while (pos < input.Length && IsFieldByte(input[pos]))
            {
                pos++;
            }

            if (pos + 1 >= input.Length)
            {
                reason = pos < input.Length && input[pos] != CR ? HandOffReason.Malformed : HandOffReason.Partial;
                return false;
            }

            if (input[pos] != CR || input[pos + 1] != LF)
            {
                // A bare LF, a bare CR, a control byte or a byte over 0x7E.
                reason = HandOffReason.Malformed;
                return false;
            }

            ReadOnlySpan<byte> value = input[valueStart..pos].TrimEnd(" \t"u8);
            pos += 2;
            if (!Classify(name, value, ref request, ref sawHost, ref sawConnection, out reason))
            {
                return false;
            }
        }

        if (pos - headersStart > limits.MaxRequestHeadersTotalSize)
        {
            reason = HandOffReason.Limits;
            return false;
        }

        if (!sawHost)
        {
            reason = HandOffReason.Host;
            return false;
        }

        length = pos;
        reason = default;
        return true;
    }

    private static bool Classify(ReadOnlySpan<byte> name, ReadOnlySpan<byte> value, ref LaneRequest request, ref bool sawHost, ref bool sawConnection, out HandOffReason reason)
    {
        reason = HandOffReason.Header;
        switch (name.Length)
        {
            case 4 when Is(name, "host"u8):
                reason = HandOffReason.Host;
                if (sawHost || !IsSimpleHost(value))
                {
                    return false;
                }

                sawHost = true;
                request.Host = value;
                return true;
            case 10 when Is(name, "connection"u8):
                reason = HandOffReason.Framing;
                if (sawConnection)
                {
                    return false;
                }

                sawConnection = true;
                if (Is(value, "close"u8))
                {
                    request.Close = true;
                    return true;
                }

                return Is(value, "keep-alive"u8);
            case 15 when Is(name, "accept-encoding"u8):
                return Take(value, ref request.AcceptEncoding);
            case 13 when Is(name, "if-none-match"u8):
                return Take(value, ref request.IfNoneMatch);
            case 17 when Is(name, "if-modified-since"u8):
                return Take(value, ref request.IfModifiedSince);
            case 5 when Is(name, "range"u8):
                return Take(value, ref request.Range);
            case 14 when Is(name, "content-length"u8):
            case 17 when Is(name, "transfer-encoding"u8):
            case 6 when Is(name, "expect"u8):
            case 7 when Is(name, "upgrade"u8):
            case 14 when Is(name, "http2-settings"u8):
            case 2 when Is(name, "te"u8):
                reason = HandOffReason.Framing;
                return false;
            case 8 when Is(name, "if-match"u8) || Is(name, "if-range"u8):
            case 19 when Is(name, "if-unmodified-since"u8) || Is(name, "proxy-authorization"u8):
            case 13 when Is(name, "authorization"u8):
                // Preconditions the lane does not evaluate, and credentials: a request carrying them may expect the
                // app to look at it.
                return false;
            default:
                // Any other field has no meaning for a static file response (Accept, User-Agent, Cookie, ...).
                return true;
        }
    }

    // Each evaluated field once, non-empty and short enough to widen on the stack.
    private static bool Take(ReadOnlySpan<byte> value, ref ReadOnlySpan<byte> slot)
    {
        if (!slot.IsEmpty || value.IsEmpty || value.Length > MaxEvaluatedValueLength)
        {
            return false;
        }

        slot = value;
        return true;
    }

    // reg-name of letters, digits, '.' and '-', with an optional port: a strict subset of what Kestrel accepts
    // (RFC 9110 7.2); IP literals and anything else go to Kestrel.
    private static bool IsSimpleHost(ReadOnlySpan<byte> value)
    {
        int colon = value.IndexOf((byte)':');
        ReadOnlySpan<byte> host = colon < 0 ? value : value[..colon];
        if (host.IsEmpty || host.Length > 253)
        {
            return false;
        }

        foreach (byte b in host)
        {
            if (!char.IsAsciiLetterOrDigit((char)b) && b != (byte)'.' && b != (byte)'-')
            {
                return false;
            }
        }

        if (colon < 0)
        {
            return true;
        }

        ReadOnlySpan<byte> port = value[(colon + 1)..];
        if (port.IsEmpty || port.Length > 5)
        {
            return false;
        }

        foreach (byte b in port)
        {
            if (!char.IsAsciiDigit((char)b))
            {
                return false;
            }
        }

        return true;
    }

    private static bool Is(ReadOnlySpan<byte> candidate, ReadOnlySpan<byte> lowerCase)
    {
        if (candidate.Length != lowerCase.Length)
        {
            return false;
        }

        for (int i = 0; i < candidate.Length; i++)
        {
            byte b = candidate[i];
            if (b is >= (byte)'A' and <= (byte)'Z')
            {
                b |= 0x20;
            }

            if (b != lowerCase[i])
            {
                return false;
            }
        }

        return true;
    }

    private static bool IsTokenByte(byte b) => b < 128 && Token[b];

    private static bool IsToken(ReadOnlySpan<byte> span)
    {
        foreach (byte b in span)
        {
            if (!IsTokenByte(b))
            {
                return false;
            }
        }

        return true;
    }

    // Visible ASCII, SP and HTAB (RFC 9110 5.5 without obs-text, which the lane leaves to Kestrel).
    private static bool IsFieldByte(byte b) => b is (>= 0x20 and <= 0x7E) or (byte)'\t';

    private static bool[] BuildTable(string extra)
    {
        var table = new bool[128];
        for (int c = 0; c < 128; c++)
        {
            table[c] = char.IsAsciiLetterOrDigit((char)c) || extra.Contains((char)c, StringComparison.Ordinal);
        }

        return table;
    }
}

/// <summary>Kestrel's request limits as the lane applies them: a little stricter, so a request near a limit goes to Kestrel.</summary>
internal readonly struct LaneLimits
{
    public int MaxRequestLineSize { get; init; }

    public int MaxRequestHeadersTotalSize { get; init; }

    public int MaxRequestHeaderCount { get; init; }

    public static LaneLimits From(Microsoft.AspNetCore.Server.Kestrel.Core.KestrelServerLimits limits) => new()
    {
        MaxRequestLineSize = limits.MaxRequestLineSize - 2,
        MaxRequestHeadersTotalSize = limits.MaxRequestHeadersTotalSize - 2,
        MaxRequestHeaderCount = limits.MaxRequestHeaderCount - 1,
    };
}
