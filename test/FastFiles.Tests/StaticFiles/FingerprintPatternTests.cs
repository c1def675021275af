using System.Text.RegularExpressions;
using FastFiles.StaticFiles;
using Microsoft.AspNetCore.Builder;

namespace FastFiles.Tests.StaticFiles;

/// <summary>
/// The default fingerprint pattern against real-world file names: a match makes a file <c>immutable</c> for a year,
/// so a false match is the costly mistake and a miss only costs a revalidation.
/// </summary>
public sealed class FingerprintPatternTests
{
    private static readonly Regex Pattern = new(FastStaticFileOptions.DefaultFingerprintPattern, RegexOptions.CultureInvariant, TimeSpan.FromSeconds(1));

    [Theory]
    // .NET static web assets (MapStaticAssets' fingerprinted routes)
    [InlineData("/css/site.z61v9ykpx5.css")]
    [InlineData("/js/site.dkbv4grvwe.js")]
    [InlineData("/lib/bootstrap/dist/css/bootstrap.min.9d6hctlf3u.css")]
    [InlineData("/lib/jquery/dist/jquery.min.0i3buxo5is.js")]
    [InlineData("/MyApp.k9xj2f0qzs.styles.css")]
    [InlineData("/_content/MyLib/MyLib.7aqz3m1p0c.bundle.scp.css")]
    [InlineData("/favicon.x2r9kq8w1e.ico")]
    // webpack / Create React App / Parcel / Angular (hex content hashes)
    [InlineData("/static/js/main.3f2a9c1b.js")]
    [InlineData("/static/js/787.a1b2c3d4.chunk.js")]
    [InlineData("/static/css/main.073c9b0a.css")]
    [InlineData("/chunk.a1b2c3d4e5f6.js")]
    [InlineData("/main.3f2a9c1b4d5e6f70.js")]
    [InlineData("/styles.ef46db3751d8e999.css")]
    [InlineData("/runtime.5f8a2c9e1b3d4f60.js")]
    [InlineData("/index.9b1e2c3d.js")]
    [InlineData("/app-3f2a9c1b4d5e6f7a8b9c.js")]
    [InlineData("/vendors~main.1a2b3c4d5e6f7a8b9c0d.js")]
    [InlineData("/assets/application-3f2a9c1b.css")]
    [InlineData("/assets/application-d2f8a9c1e3b4f5a6d7c8b9a0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0.css")]
    [InlineData("/img/logo.8C2F9A1B.png")]
    [InlineData("/css/main.min.4e7d1f2a9b3c.css")]
    // Next.js (bare hex names and name-hash chunks)
    [InlineData("/_next/static/css/ef46db3751d8e999.css")]
    [InlineData("/_next/static/chunks/webpack-59c5c889f52620d6.js")]
    [InlineData("/_next/static/chunks/pages/_app-3e1d4b2a9c8f7e6d.js")]
    // Rollup / Vite / esbuild (8 base64url or base32 characters)
    [InlineData("/assets/index-BxYz12Ab.js")]
    [InlineData("/assets/index-D8kOk0Jr.css")]
    [InlineData("/assets/vendor-CJ6Bl8pv.js")]
    [InlineData("/assets/react-dom-B_x9Qe-1.js")]
    [InlineData("/chunk-5SXYQ7G3.js")]
    [InlineData("/main-2KQXW7ZR.js")]
    [InlineData("/polyfills-FFHMD2TL.js")]
    public void Recognizes(string path)
    {
        Assert.Matches(Pattern, path);
        Assert.True(FingerprintMatcher.Create(FastStaticFileOptions.DefaultFingerprintPattern)!.IsMatch(path));
    }

    [Theory]
    // dates and other all-digit runs
    [InlineData("/report-20261123.csv")]
    [InlineData("/reports/report.20261123.csv")]
    [InlineData("/backup-2026-11-23.zip")]
    [InlineData("/logs/app_20261123.log")]
    [InlineData("/photos/IMG_20261123_143000.jpg")]
    [InlineData("/invoice.1234567890.pdf")]
    [InlineData("/12345678.png")]
    [InlineData("/1234567890123456.json")]
    // version numbers
    [InlineData("/lib/jquery-3.7.1.min.js")]
    [InlineData("/js/app.v2.js")]
    [InlineData("/css/bootstrap-5.3.3.min.css")]
    [InlineData("/js/vue.3.4.21.js")]
    [InlineData("/js/lodash-4.17.21.js")]
    [InlineData("/js/react-18.2.0.production.min.js")]
    [InlineData("/js/chart-v2-beta3.js")]
    [InlineData("/js/app-v10.js")]
    // words, dimensions, word-plus-number names
    [InlineData("/css/site.css")]
    [InlineData("/index.html")]
    [InlineData("/js/main.js")]
    [InlineData("/css/site.components.css")]
    [InlineData("/js/jquery.validate.unobtrusive.min.js")]
    [InlineData("/img/logo-1024x768.png")]
    [InlineData("/img/banner-1920x1080.jpg")]
    [InlineData("/fonts/OpenSans-Italic12.ttf")]
    [InlineData("/fonts/Lato-Light300.woff2")]
    [InlineData("/fonts/roboto-v30-latin-regular.woff2")]
    [InlineData("/fonts/Roboto-Regular.ttf")]
    [InlineData("/img/feedface.png")]
    [InlineData("/assets/index-MyButton.js")]
    [InlineData("/downloads/setup-x64.exe")]
    [InlineData("/docs/rfc9110.txt")]
    // a hash-like directory does not make the file immutable
    [InlineData("/3f2a9c1b4d5e6f70/site.css")]
    public void DoesNotRecognize(string path)
    {
        Assert.DoesNotMatch(Pattern, path);
        Assert.False(FingerprintMatcher.Create(FastStaticFileOptions.DefaultFingerprintPattern)!.IsMatch(path));
    }
}
