using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Extensions.FileProviders;

namespace Microsoft.AspNetCore.Builder;

/// <summary>
/// Options for <c>UseFastFiles</c>. Names match <c>StaticFileOptions</c> where the option exists there.
/// Bindable from the <c>FastFiles:StaticFiles</c> configuration section: every option except <see cref="FileProvider"/>,
/// <see cref="ContentTypeProvider"/> and the callbacks (lists such as <see cref="DefaultFileNames"/> bind as arrays).
/// </summary>
public sealed class FastStaticFileOptions
{
    /// <summary>
    /// The default fingerprint pattern. It recognizes .NET's static web assets form (<c>site.z61v9ykpx5.css</c>: ten
    /// lowercase base36 characters between dots), hex content hashes of 8 to 64 digits after <c>.</c>, <c>-</c> or
    /// <c>_</c> (webpack, Parcel, Angular, Rails: <c>main.3f2a9c1b.js</c>, <c>main.3f2a9c1b.chunk.js</c>), bare hex file
    /// names of 16 or more digits (Next.js: <c>ef46db3751d8e999.css</c>) and Rollup, Vite and esbuild hashes
    /// (<c>index-BxYz12Ab.js</c>, <c>chunk-5SXYQ7G3.js</c>: eight base64url characters with an uppercase letter).
    /// </summary>
    /// <remarks>
    /// Every form must mix letters and digits, so dates (<c>report-20261123.csv</c>), version numbers
    /// (<c>jquery-3.7.1.min.js</c>, <c>app.v2.js</c>), dimensions (<c>logo-1024x768.png</c>), words (<c>site.components.css</c>)
    /// and word-plus-number names (<c>font-Italic12.ttf</c>) never match. The price: a hash that happens to have no
    /// digit (about 1 in 4 of Rollup's 8-character hashes, 1 in 25 of .NET's) or, for Rollup, no uppercase letter is not recognized and is revalidated
    /// instead; a wrong match would make browsers keep a stale file for a year.
    /// </remarks>
    public const string DefaultFingerprintPattern =
        @"\.(?=[a-z0-9]{0,9}[0-9])(?=[a-z0-9]{0,9}[a-z])[a-z0-9]{10}(?:\.[A-Za-z0-9]+){1,3}$"
        + @"|[._-](?:(?=[0-9a-f]{0,63}[0-9])(?=[0-9a-f]{0,63}[a-f])[0-9a-f]{8,64}|(?=[0-9A-F]{0,63}[0-9])(?=[0-9A-F]{0,63}[A-F])[0-9A-F]{8,64})(?:\.[A-Za-z0-9]+){1,2}$"
        + @"|/(?=[0-9a-f]{0,63}[0-9])(?=[0-9a-f]{0,63}[a-f])[0-9a-f]{16,64}\.[A-Za-z0-9]+$"
        + @"|-(?=[A-Za-z0-9_-]{0,7}[0-9])(?=[A-Za-z0-9_-]{0,7}[A-Z])(?=[0-9_-]{0,7}[A-Za-z][A-Za-z0-9_-]{0,6}[A-Za-z])(?![A-Za-z]+[0-9]+\.)[A-Za-z0-9_-]{8}\.[A-Za-z0-9]+$";

    /// <summary>
    /// The media types <see cref="EnableDynamicCompression"/> compresses when <see cref="CompressibleContentTypes"/> is not
    /// set: every <c>text/*</c> type (HTML, CSS, JavaScript, plain text, CSV, XML, Markdown, ...), JSON and its relatives,
    /// JavaScript's legacy type, SVG, XML, XHTML, RSS and Atom, WebAssembly, icons, and the uncompressed font formats
    /// (TrueType, OpenType, EOT). Formats that are compressed already (images, audio, video, WOFF2, archives) gain nothing.
    /// </summary>
    public static readonly IReadOnlyList<string> DefaultCompressibleContentTypes = FastFiles.Caching.CompressionPolicy.DefaultContentTypes;

    /// <summary>The Cache-Control value sent for fingerprinted paths.</summary>
    public const string ImmutableCacheControl = "public, max-age=31536000, immutable";

    /// <summary>The URL prefix the files are served under.</summary>
    /// <remarks>Defaults to the empty path (the site root).</remarks>
    public PathString RequestPath { get; set; } = PathString.Empty;

    /// <summary>Where files come from.</summary>
    /// <remarks>
    /// Defaults to <see langword="null"/>: the host's <c>IWebHostEnvironment.WebRootFileProvider</c>. A
    /// <see cref="PhysicalFileProvider"/> (the usual case) is served through FastFiles' handle-based path.
    /// </remarks>
    public IFileProvider? FileProvider { get; set; }

    /// <summary>Maps file names to content types.</summary>
    /// <remarks>Defaults to <see langword="null"/>: a shared <see cref="FileExtensionContentTypeProvider"/>.</remarks>
    public IContentTypeProvider? ContentTypeProvider { get; set; }

    /// <summary>Whether files whose extension has no known content type are served (with <see cref="DefaultContentType"/>).</summary>
    /// <remarks>Defaults to <see langword="false"/>, as in UseStaticFiles: unknown types fall through to the next middleware.</remarks>
    public bool ServeUnknownFileTypes { get; set; }

    /// <summary>The content type for unknown file types when <see cref="ServeUnknownFileTypes"/> is on.</summary>
    /// <remarks>Defaults to <see langword="null"/> (no Content-Type header), as in UseStaticFiles.</remarks>
    public string? DefaultContentType { get; set; }

    /// <summary>Called after the status and headers are set and before the body is written, for every response FastFiles generates.</summary>
    /// <remarks>Defaults to <see langword="null"/>.</remarks>
    public Action<FastFileResponseContext>? OnPrepareResponse { get; set; }

    /// <summary>
    /// As <see cref="OnPrepareResponse"/>, awaited after it, for work that waits (as <c>StaticFileOptions.OnPrepareResponseAsync</c>).
    /// </summary>
    /// <remarks>Defaults to <see langword="null"/>.</remarks>
    public Func<FastFileResponseContext, Task>? OnPrepareResponseAsync { get; set; }

    /// <summary>
    /// File names tried, in order, when a request names a directory (for example <c>index.html</c>). Empty means
    /// directories are not served, which is what UseStaticFiles does.
    /// </summary>
    /// <remarks>Defaults to an empty list.</remarks>
    public IList<string> DefaultFileNames { get; set; } = new List<string>();

    /// <summary>
    /// When a directory with a default file is requested without a trailing slash, redirect (301) to the path with one,
    /// so relative links in the page resolve. Off, the default file answers at the URL without the slash, as
    /// <c>UseDefaultFiles</c> does.
    /// </summary>
    /// <remarks>Defaults to <see langword="true"/>.</remarks>
    public bool RedirectToAppendTrailingSlash { get; set; } = true;

    /// <summary>Whether files and directories whose name starts with a dot (<c>.env</c>, <c>.git/</c>) may be served.</summary>
    /// <remarks>
    /// Defaults to <see langword="false"/>: any dot segment anywhere in the path is not served, except a directory named
    /// <c>.well-known</c> (RFC 8615; ACME http-01 challenges, <c>security.txt</c>), whose files are served unless their
    /// own names start with a dot.
    /// </remarks>
    public bool ServeDotFiles { get; set; }

    /// <summary>
    /// Whether files reached through symbolic links that resolve outside the root are served. Links that stay
    /// inside the root are always followed.
    /// </summary>
    /// <remarks>Defaults to <see langword="false"/>. Applies to physical roots.</remarks>
    public bool FollowSymlinksOutsideRoot { get; set; }

    /// <summary>
    /// Serve <c>file.br</c>, <c>file.zst</c> or <c>file.gz</c> from beside <c>file</c> when the request's
    /// Accept-Encoding allows it, with <c>Content-Encoding</c> and <c>Vary: Accept-Encoding</c>.
    /// </summary>
    /// <remarks>Defaults to <see langword="true"/>.</remarks>
    public bool EnablePrecompressedFiles { get; set; } = true;

    /// <summary>
    /// Whether files of a compressible type (<see cref="CompressibleContentTypes"/>) between
    /// <see cref="DynamicCompressionMinimumSize"/> and <see cref="DynamicCompressionMaximumSize"/> are also sent brotli- or
    /// gzip-encoded when the request's Accept-Encoding prefers it and no sidecar (<see cref="EnablePrecompressedFiles"/>)
    /// provides that coding: sidecars on disk always win. Each file version is compressed once, in the background, and
    /// its variants are kept in the file cache (within <c>FastFilesOptions.FileCacheSizeLimit</c>); until they are made
    /// the file is sent as it is. Variants are served like sidecars: <c>Content-Encoding</c>, <c>Vary: Accept-Encoding</c>
    /// on every response for the file, an ETag of their own, ranges, conditional requests.
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="false"/>: it spends CPU once per file version and cache memory per variant, and adds
    /// <c>Vary</c> to compressible responses, so it is opted into (as nginx's <c>gzip</c>). Needs the file cache
    /// (<c>FastFilesOptions.EnableFileCache</c>) and a physical root; other roots are sent as they are. Levels are
    /// <c>FastFilesOptions.BrotliCompressionQuality</c> and <c>FastFilesOptions.GzipCompressionLevel</c>.
    /// </remarks>
    public bool EnableDynamicCompression { get; set; }

    /// <summary>
    /// The media types <see cref="EnableDynamicCompression"/> compresses, compared without parameters and ignoring case;
    /// an entry ending in <c>/*</c> (<c>text/*</c>) matches every subtype.
    /// </summary>
    /// <remarks>Defaults to <see langword="null"/>: <see cref="DefaultCompressibleContentTypes"/>.</remarks>
    public IList<string>? CompressibleContentTypes { get; set; }

    /// <summary>Files smaller than this many bytes are not compressed by <see cref="EnableDynamicCompression"/>.</summary>
    /// <remarks>
    /// Defaults to 1024. Below about 1 KiB a response fits one TCP segment either way, so compressing saves no round trip
    /// (Caddy's <c>encode</c> uses 512 bytes, IIS 2,700).
    /// </remarks>
    public long DynamicCompressionMinimumSize { get; set; } = FastFiles.Caching.CompressionPolicy.DefaultMinimumSize;

    /// <summary>Files larger than this many bytes are not compressed by <see cref="EnableDynamicCompression"/>.</summary>
    /// <remarks>
    /// Defaults to 8 MiB: a file is read into memory to be compressed, and its variants share the cache's 64 MiB default
    /// budget with every other file (a variant larger than a quarter of the budget is not kept). Larger text files
    /// (data dumps, source maps) are better served from sidecars made at build time.
    /// </remarks>
    public long DynamicCompressionMaximumSize { get; set; } = FastFiles.Caching.CompressionPolicy.DefaultMaximumSize;

    /// <summary>Runs after a variant is encoded and before it is published (file sub-path, coding token): a test seam.</summary>
    internal Func<string, string, Task>? DynamicCompressionHook { get; set; }

    /// <summary>
    /// What the app's response compression (<c>UseResponseCompression</c>) may do with these files over HTTPS, as
    /// <c>StaticFileOptions.HttpsCompression</c>: static files carry no secrets an attacker could probe for (BREACH), so
    /// by default they are compressed there even when <c>ResponseCompressionOptions.EnableForHttps</c> is off.
    /// </summary>
    /// <remarks>Defaults to <see cref="Microsoft.AspNetCore.Http.Features.HttpsCompressionMode.Compress"/>, as stock.</remarks>
    public Microsoft.AspNetCore.Http.Features.HttpsCompressionMode HttpsCompression { get; set; } = Microsoft.AspNetCore.Http.Features.HttpsCompressionMode.Compress;

    /// <summary>The Cache-Control value for files that do not match <see cref="FingerprintPattern"/>.</summary>
    /// <remarks>Defaults to <see langword="null"/>: no Cache-Control header (as does an empty value).</remarks>
    public string? CacheControl { get; set; }

    /// <summary>
    /// A regular expression matched against the request's sub-path; matching (content-hashed) files are sent
    /// with <see cref="ImmutableCacheControl"/>. Set to <see langword="null"/> or empty to turn this off.
    /// </summary>
    /// <remarks>Defaults to <see cref="DefaultFingerprintPattern"/>.</remarks>
    public string? FingerprintPattern { get; set; } = DefaultFingerprintPattern;

    /// <summary>
    /// Whether the ETag of a physical root's files is a hash of their bytes (the first 128 bits of SHA-256, base64url)
    /// instead of their modification time and length: identical on every server that holds the same bytes, so
    /// revalidation by browsers and CDNs survives a deploy that changes modification times. Each precompressed
    /// variant gets the hash of its own bytes.
    /// </summary>
    /// <remarks>
    /// Defaults to <see langword="false"/>. Computed once per file version by the file cache: at once for files whose
    /// bytes it holds (<c>MaxCachedFileSize</c>), on a background thread for larger ones. Until a large file's hash is
    /// known, responses carry no ETag (Last-Modified still validates) and a request with If-Match, If-None-Match or
    /// If-Range waits for the hash, so a version never has two different tags. Without the file cache the hash is
    /// computed when such a request needs it, while one waits; either way each version is read once in the process
    /// and its tag remembered (up to 4,096 versions). Roots served from other file providers keep modification-time
    /// tags.
    /// </remarks>
    public bool EnableContentHashETags { get; set; }

    /// <summary>Which files get dynamically compressed variants and how, or null when <see cref="EnableDynamicCompression"/> is off.</summary>
    internal FastFiles.Caching.CompressionPolicy? CreateCompressionPolicy(FastFilesOptions fastFiles)
        => EnableDynamicCompression
            ? new((IEnumerable<string>?)CompressibleContentTypes ?? DefaultCompressibleContentTypes, DynamicCompressionMinimumSize, DynamicCompressionMaximumSize,
                fastFiles.BrotliCompressionQuality, fastFiles.GzipCompressionLevel) { BeforePublish = DynamicCompressionHook }
            : null;

    /// <summary>The per-file decisions these options make (content type, Cache-Control), shared by UseFastFiles and the static lane.</summary>
    /// <remarks>
    /// Called when <c>UseFastFiles</c> and the static lane are built, at start: a value that could only fail per response
    /// throws an <see cref="Microsoft.Extensions.Options.OptionsValidationException"/> naming the option instead.
    /// </remarks>
    internal FastFiles.Http.StaticFilePolicy CreatePolicy()
    {
        var failures = new List<string>();
        // Kestrel refuses control characters and non-ASCII in a header value when it is set (a 500 for every response),
        // and the static lane writes its header bytes as ASCII (a CR or LF would start a header line of its own).
        void HeaderValue(string? value, string option)
        {
            if (value is not null && value.AsSpan().ContainsAnyExcept(HeaderValueChars))
            {
                failures.Add($"FastStaticFileOptions.{option} must hold only visible ASCII, spaces and tabs (no CR, LF or other control characters, no non-ASCII): it is sent as a header value.");
            }
        }

        // As UseStaticFiles refuses it ("Request path must not end in a slash"): no request path would match it.
        if (RequestPath.HasValue && RequestPath.Value!.EndsWith('/'))
        {
            failures.Add($"FastStaticFileOptions.{nameof(RequestPath)} must not end in a slash (it is '{RequestPath.Value}').");
        }

        HeaderValue(CacheControl, nameof(CacheControl));
        HeaderValue(DefaultContentType, nameof(DefaultContentType));
        if (EnableDynamicCompression)
        {
            if (DynamicCompressionMinimumSize < 0)
            {
                failures.Add($"FastStaticFileOptions.{nameof(DynamicCompressionMinimumSize)} must not be negative (it is {DynamicCompressionMinimumSize}).");
            }

            if (DynamicCompressionMaximumSize < DynamicCompressionMinimumSize || DynamicCompressionMaximumSize > Array.MaxLength)
            {
                failures.Add($"FastStaticFileOptions.{nameof(DynamicCompressionMaximumSize)} must be from {nameof(DynamicCompressionMinimumSize)} ({DynamicCompressionMinimumSize}) to {Array.MaxLength} (it is {DynamicCompressionMaximumSize}): a file is read into one array to be compressed.");
            }
        }

        FastFiles.StaticFiles.FingerprintMatcher? fingerprint = null;
        try
        {
            fingerprint = FastFiles.StaticFiles.FingerprintMatcher.Create(FingerprintPattern);
        }
        catch (ArgumentException ex)
        {
            failures.Add($"FastStaticFileOptions.{nameof(FingerprintPattern)} is not a valid regular expression: {ex.Message}");
        }

        if (failures.Count > 0)
        {
            throw new Microsoft.Extensions.Options.OptionsValidationException(Microsoft.Extensions.Options.Options.DefaultName, typeof(FastStaticFileOptions), failures);
        }

        // Empty is no header, as UseStaticFiles treats an empty DefaultContentType (and as configuration binds a blank
        // value): "Content-Type: " is not a media type (RFC 9110 8.3), "Cache-Control: " says nothing.
        return new(ContentTypeProvider, ServeUnknownFileTypes, NullIfEmpty(DefaultContentType), NullIfEmpty(CacheControl), fingerprint is not null ? fingerprint.IsMatch : null, OnPrepareResponse, HttpsCompression, OnPrepareResponseAsync);
    }

    private static string? NullIfEmpty(string? value) => string.IsNullOrWhiteSpace(value) ? null : value;

    // What a field value may hold here (RFC 9110 5.5: visible characters, SP and HTAB), ASCII only.
    private static readonly System.Buffers.SearchValues<char> HeaderValueChars = System.Buffers.SearchValues.Create(
        "\t !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~");
}
