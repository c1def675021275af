using FastFiles.Sample;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.Extensions.FileProviders;

// Usage: dotnet run --project samples/FastFiles.Sample [-- --root DIR] [--urls "http://127.0.0.1:5080;https://127.0.0.1:5443"]
string? rootArgument = null;
var passThrough = new List<string>();
for (int i = 0; i < args.Length; i++)
{
    if (args[i] == "--root" && i + 1 < args.Length)
    {
        rootArgument = Path.GetFullPath(args[++i]);
    }
    else
    {
        passThrough.Add(args[i]);
    }
}

var builder = WebApplication.CreateBuilder(new WebApplicationOptions
{
    Args = [.. passThrough],
    ContentRootPath = AppContext.BaseDirectory,
});

string root = rootArgument ?? Path.Combine(AppContext.BaseDirectory, "wwwroot");
if (!Directory.Exists(root))
{
    Console.Error.WriteLine($"The folder '{root}' does not exist.");
    return 1;
}

if (rootArgument is null)
{
    Precompressor.Run(root);
}

var certificate = SampleCertificate.DevelopmentOrSelfSigned(out bool generated);
// The sample's own addresses only when none are configured (--urls, ASPNETCORE_URLS, http_ports/https_ports or
// Kestrel:Endpoints in appsettings.json), so a second instance or a configured deployment can choose its own.
bool configured = !string.IsNullOrEmpty(builder.Configuration["urls"])
    || !string.IsNullOrEmpty(builder.Configuration["http_ports"])
    || !string.IsNullOrEmpty(builder.Configuration["https_ports"])
    || builder.Configuration.GetSection("Kestrel:Endpoints").GetChildren().Any();
if (!configured)
{
    builder.WebHost.UseUrls("http://127.0.0.1:5080", "https://127.0.0.1:5443");
}

builder.WebHost.ConfigureKestrel(kestrel =>
{
    // FastFiles' connection-level parts on every endpoint, bound from URLs or from Kestrel:Endpoints: TLS record
    // coalescing on HTTPS ones, the zero-copy send path (sendfile) on plaintext ones, the request header cache on all.
    // The HTTP/1.1 static lane serves wwwroot on every endpoint (with UseFastFiles' options, below) before Kestrel
    // parses a request; what it does not handle goes to the app as usual. Lane requests skip the app's middleware, so
    // only public roots belong in it.
    kestrel.UseFastFilesConnections(fastFiles =>
    {
        fastFiles.EnableZeroCopySendFile = true;
        fastFiles.EnableStaticLane = true;
    });
    kestrel.ConfigureHttpsDefaults(https => https.ServerCertificate = certificate);
});

// The tuned host profile: no per-request hosting log scope, no Server header (README, "Tuned host profile").
builder.WebHost.UseFastFilesTunedProfile();

// Options come from the "FastFiles" section of appsettings.json; code can refine them.
builder.Services.AddFastFiles();
builder.Services.ConfigureFastStaticFiles(options =>
{
    options.FileProvider = new PhysicalFileProvider(root);
    options.DefaultFileNames = ["index.html"];
});

// The lane's one root: UseFastFiles' own root and options (Files and PhysicalPath left null).
builder.Services.ConfigureStaticLane(lane => lane.Roots.Add(new StaticLaneRootOptions()));

var app = builder.Build();

// Anything below that calls SendFileAsync (UseStaticFiles, Results.File) goes through FastFiles too.
app.UseFastSendFile();
app.UseFastFiles();

// A file result with ranges, conditionals and a download name. The route value is resolved under the root as
// UseFastFiles resolves request paths: dot segments, dotfiles and symbolic links out of the root are a 404.
app.MapGet("/download/{**path}", (string path) => FastResults.File(root, path, fileDownloadName: Path.GetFileName(path)));

await app.StartAsync();
var addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()?.Addresses ?? [];
Console.WriteLine($"FastFiles sample serving {root}");
foreach (string address in addresses)
{
    Console.WriteLine($"  listening on {address}");
}

Console.WriteLine(generated
    ? "  HTTPS uses a self-signed certificate made at start-up (curl -k, or trust a dev certificate with 'dotnet dev-certs https')."
    : "  HTTPS uses the ASP.NET Core development certificate.");
Console.WriteLine("Press Ctrl+C to stop.");
await app.WaitForShutdownAsync();
return 0;
