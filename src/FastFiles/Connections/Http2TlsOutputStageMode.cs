namespace Microsoft.AspNetCore.Builder;

/// <summary>Which TLS connections the HTTP/2 TLS output stage decouples from encryption.</summary>
public enum Http2TlsOutputStageMode
{
    /// <summary>
    /// Only connections that negotiated HTTP/2 through ALPN (<c>h2</c>), decided per connection after the TLS handshake.
    /// HTTP/1.1 over TLS and plaintext connections pass through untouched. This is the default.
    /// </summary>
    Http2Only = 0,

    /// <summary>Every TLS connection, whatever protocol it negotiated. Plaintext connections still pass through.</summary>
    AllProtocols = 1,

    /// <summary>No connection is staged; the middleware, where installed, passes every connection through.</summary>
    Disabled = 2,
}
