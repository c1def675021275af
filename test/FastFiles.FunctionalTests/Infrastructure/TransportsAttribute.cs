using System.Reflection;
using Xunit.Sdk;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>
/// The transport matrix: one test case per transport, as the theory's first argument. With no arguments, the three
/// every file response must behave the same on: HTTP/1.1, h2c (prior knowledge) and h2 over TLS.
/// </summary>
[AttributeUsage(AttributeTargets.Method, AllowMultiple = false)]
public sealed class TransportsAttribute(params Transport[] transports) : DataAttribute
{
    public override IEnumerable<object[]> GetData(MethodInfo testMethod)
        => (transports.Length == 0 ? TransportMatrix.Default : transports).Select(t => new object[] { t });
}

/// <summary>The transports the functional tests run on: theory data builders iterate these, never a list of their own.</summary>
public static class TransportMatrix
{
    /// <summary>HTTP/1.1, h2c and h2 over TLS.</summary>
    public static readonly Transport[] Default = [Transport.Http11, Transport.H2c, Transport.H2Tls];

    /// <summary>The TLS transports: h2 and HTTP/1.1 over TLS.</summary>
    public static readonly Transport[] Tls = [Transport.H2Tls, Transport.Http11Tls];

    /// <summary>Every transport, HTTP/1.1 over TLS included.</summary>
    public static readonly Transport[] All = Enum.GetValues<Transport>();
}
