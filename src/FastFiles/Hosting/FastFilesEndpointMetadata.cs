namespace FastFiles.Hosting;

/// <summary>Marks an endpoint whose files FastFiles sends (added by <c>WithFastFiles</c>).</summary>
internal sealed class FastFilesEndpointMetadata
{
    public static readonly FastFilesEndpointMetadata Instance = new();

    private FastFilesEndpointMetadata()
    {
    }
}
