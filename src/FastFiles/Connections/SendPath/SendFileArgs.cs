using System.Net.Sockets;
using System.Threading.Tasks.Sources;

namespace FastFiles.Connections.SendPath;

/// <summary>
/// One reusable <see cref="Socket.SendPacketsAsync"/> of a file range, awaitable without allocating: the runtime waits
/// for the socket to have room and sends with sendfile(2) on its own event loop.
/// </summary>
internal sealed class SendFileArgs : SocketAsyncEventArgs, IValueTaskSource<long>
{
    private readonly SendPacketsElement[] _elements = new SendPacketsElement[1];
    private ManualResetValueTaskSourceCore<long> _source;

    public SendFileArgs()
        : base(unsafeSuppressExecutionContextFlow: true)
    {
        _source.RunContinuationsAsynchronously = true;
    }

    /// <summary>Sends <paramref name="count"/> bytes of <paramref name="file"/> at <paramref name="offset"/>; the result is the bytes sent (fewer on failure, see <see cref="SocketAsyncEventArgs.SocketError"/>).</summary>
    public ValueTask<long> SendAsync(Socket socket, FileStream file, long offset, int count)
    {
        _source.Reset();
        _elements[0] = new SendPacketsElement(file, offset, count, endOfPacket: false);
        SendPacketsElements = _elements;
        if (!socket.SendPacketsAsync(this))
        {
            Finish();
        }

        return new ValueTask<long>(this, _source.Version);
    }

    protected override void OnCompleted(SocketAsyncEventArgs e) => Finish();

    private void Finish()
    {
        _elements[0] = null!;
        _source.SetResult(BytesTransferred);
    }

    long IValueTaskSource<long>.GetResult(short token) => _source.GetResult(token);

    ValueTaskSourceStatus IValueTaskSource<long>.GetStatus(short token) => _source.GetStatus(token);

    void IValueTaskSource<long>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
        => _source.OnCompleted(continuation, state, token, flags);
}
