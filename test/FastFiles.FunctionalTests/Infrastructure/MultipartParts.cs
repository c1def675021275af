using Microsoft.AspNetCore.WebUtilities;

namespace FastFiles.FunctionalTests.Infrastructure;

/// <summary>One part of a multipart/byteranges body, as an independent parser (<see cref="MultipartReader"/>) reads it.</summary>
public sealed record MultipartPart(string? ContentType, string? ContentRange, byte[] Body)
{
    public static async Task<List<MultipartPart>> ReadAsync(string boundary, Stream body)
    {
        var reader = new MultipartReader(boundary, body);
        var parts = new List<MultipartPart>();
        while (await reader.ReadNextSectionAsync() is { } section)
        {
            var bytes = new MemoryStream();
            await section.Body.CopyToAsync(bytes);
            parts.Add(new MultipartPart(section.ContentType, section.Headers!["Content-Range"].ToString(), bytes.ToArray()));
        }

        return parts;
    }
}
