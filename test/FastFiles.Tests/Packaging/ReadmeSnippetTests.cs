using System.Diagnostics;
using System.Text;
using System.Text.RegularExpressions;

namespace FastFiles.Tests.Packaging;

/// <summary>
/// Every C# block of the repository README and the package README compiles in a template-like app
/// (<c>Microsoft.NET.Sdk.Web</c>, <c>net10.0</c>, implicit usings and nullable on, as <c>dotnet new web</c> makes it)
/// that gets FastFiles as a user does: a <c>PackageReference</c> to the package packed from this build, restored
/// from a local folder source into a packages folder of its own, with no usings beyond those a block states itself.
/// </summary>
[Collection(PackageCollection.Name)]
public sealed partial class ReadmeSnippetTests
{
    [Fact]
    public async Task Readme_snippets_compile_in_a_template_app()
    {
        string repo = RepositoryRoot();
        var snippets = new List<(string Readme, int Index, string Code)>();
        foreach (string readme in new[] { "README.md", "src/FastFiles/README.md" })
        {
            int index = 0;
            foreach (Match block in CSharpBlock().Matches(await File.ReadAllTextAsync(Path.Combine(repo, readme))))
            {
                snippets.Add((readme, ++index, block.Groups[1].Value));
            }
        }

        Assert.True(snippets.Count(s => s.Readme.StartsWith("src/", StringComparison.Ordinal)) >= 4, "the package README lost its snippets");

        string app = Path.Combine(Path.GetTempPath(), "fastfiles-readme-" + Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(app);
        try
        {
            // The package of the library this test was built against (same configuration), as CI packs it.
            string feed = Path.Combine(app, "feed");
            string configuration = AppContext.BaseDirectory.Contains($"{Path.DirectorySeparatorChar}Debug{Path.DirectorySeparatorChar}", StringComparison.Ordinal) ? "Debug" : "Release";
            (int packExit, string packOutput) = await DotnetAsync(repo, "pack", Path.Combine(repo, "src", "FastFiles", "FastFiles.csproj"), "-c", configuration, "--no-build", "-o", feed);
            Assert.True(packExit == 0, "dotnet pack failed:\n" + packOutput);
            string package = Path.GetFileNameWithoutExtension(Assert.Single(Directory.GetFiles(feed, "FastFiles.*.nupkg")));
            string version = package["FastFiles.".Length..];

            // Only the local folder as a source, and a packages folder of its own: a FastFiles of the same version
            // cached from an earlier build cannot stand in for this one.
            string packages = Path.Combine(app, "packages");
            await File.WriteAllTextAsync(Path.Combine(app, "nuget.config"), $"""
                <?xml version="1.0" encoding="utf-8"?>
                <configuration>
                  <packageSources>
                    <clear />
                    <add key="local" value="{feed}" />
                  </packageSources>
                </configuration>
                """);
            await File.WriteAllTextAsync(Path.Combine(app, "ReadmeApp.csproj"), $"""
                <Project Sdk="Microsoft.NET.Sdk.Web">
                  <PropertyGroup>
                    <TargetFramework>net10.0</TargetFramework>
                    <Nullable>enable</Nullable>
                    <ImplicitUsings>enable</ImplicitUsings>
                    <RestorePackagesPath>{packages}</RestorePackagesPath>
                  </PropertyGroup>
                  <ItemGroup>
                    <PackageReference Include="FastFiles" Version="{version}" />
                  </ItemGroup>
                </Project>
                """);
            await File.WriteAllTextAsync(Path.Combine(app, "Program.cs"), Program(snippets));

            (int exitCode, string output) = await DotnetAsync(app, "build", app, "-nologo", "-v", "q", "-clp:ErrorsOnly", "-nodeReuse:false");
            Assert.True(exitCode == 0, $"README snippets do not compile in a template app:\n{output}\n\n{await File.ReadAllTextAsync(Path.Combine(app, "Program.cs"))}");
            Assert.True(File.Exists(Path.Combine(packages, "fastfiles", version.ToLowerInvariant(), "lib", "net10.0", "FastFiles.dll")), "the app did not compile against the packed package");
        }
        finally
        {
            Directory.Delete(app, recursive: true);
        }
    }

    // Each block becomes the body of its own method; a block that uses `builder` or `app` without declaring them
    // gets them as parameters, and its own `using` lines go to the top of the file.
    private static string Program(List<(string Readme, int Index, string Code)> snippets)
    {
        var usings = new SortedSet<string>(StringComparer.Ordinal);
        var methods = new StringBuilder();
        foreach ((string readme, int index, string code) in snippets)
        {
            var body = new StringBuilder();
            foreach (string line in code.Split('\n'))
            {
                if (UsingLine().IsMatch(line))
                {
                    usings.Add(line.Trim());
                }
                else
                {
                    body.Append("        ").AppendLine(line);
                }
            }

            var parameters = new List<string> { "string[] args" };
            if (!code.Contains("var builder =", StringComparison.Ordinal))
            {
                parameters.Add("WebApplicationBuilder builder");
            }

            if (!code.Contains("var app =", StringComparison.Ordinal))
            {
                parameters.Add("WebApplication app");
            }

            string name = $"{(readme.StartsWith("src/", StringComparison.Ordinal) ? "Package" : "Repository")}Readme{index}";
            methods.AppendLine($"    // {readme}, C# block {index}")
                .AppendLine($"    public static async Task {name}({string.Join(", ", parameters)})")
                .AppendLine("    {")
                .Append(body)
                .AppendLine("        await Task.CompletedTask;")
                .AppendLine("    }")
                .AppendLine();
        }

        return string.Join("\n", usings) + "\n\npublic static class ReadmeSnippets\n{\n    public static void Main()\n    {\n    }\n\n" + methods + "}\n";
    }

    internal static async Task<(int ExitCode, string Output)> DotnetAsync(string workingDirectory, params string[] arguments)
    {
        var start = new ProcessStartInfo("dotnet", arguments)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            WorkingDirectory = workingDirectory,
        };
        // The test host's own MSBuild settings must not leak into an independent build.
        foreach (string key in start.Environment.Keys.Where(k => k.StartsWith("MSBUILD", StringComparison.OrdinalIgnoreCase)).ToArray())
        {
            start.Environment.Remove(key);
        }

        start.Environment["DOTNET_CLI_TELEMETRY_OPTOUT"] = "1";
        start.Environment["DOTNET_NOLOGO"] = "1";
        using Process process = Process.Start(start)!;
        Task<string> stdout = process.StandardOutput.ReadToEndAsync();
        Task<string> stderr = process.StandardError.ReadToEndAsync();
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(5));
        await process.WaitForExitAsync(timeout.Token);
        return (process.ExitCode, await stdout + await stderr);
    }

    internal static string RepositoryRoot()
    {
        for (DirectoryInfo? directory = new(AppContext.BaseDirectory); directory is not null; directory = directory.Parent)
        {
            if (File.Exists(Path.Combine(directory.FullName, "FastFiles.sln")))
            {
                return directory.FullName;
            }
        }

        throw new InvalidOperationException("FastFiles.sln not found above " + AppContext.BaseDirectory);
    }

    [GeneratedRegex("```csharp\\n(.*?)```", RegexOptions.Singleline)]
    private static partial Regex CSharpBlock();

    [GeneratedRegex("^using [A-Za-z0-9_.]+;\\s*$")]
    private static partial Regex UsingLine();
}
