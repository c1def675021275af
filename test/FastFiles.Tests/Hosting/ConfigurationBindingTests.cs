using System.Collections;
using System.Reflection;
using FastFiles.Hosting;
using FastFiles.Responses;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace FastFiles.Tests.Hosting;

/// <summary>
/// The library binds its options with code generated at compile time (trimming and Native AOT need no reflection);
/// this test assembly binds with the reflection binder, the one applications used before. Every option set in
/// configuration must come out the same both ways, through every way FastFiles binds, and a bad value must fail the
/// same way.
/// </summary>
public sealed class ConfigurationBindingTests
{
    // A value for every option that configuration can set, none of them the default.
    private static readonly Dictionary<string, string?> s_everything = new()
    {
        ["FastFiles:BufferSize"] = "16384",
        ["FastFiles:SynchronousReadThreshold"] = "1000",
        ["FastFiles:DisableStringReuse"] = "true",
        ["FastFiles:EnableFileCache"] = "false",
        ["FastFiles:MaxCachedFileSize"] = "5000",
        ["FastFiles:FileCacheSizeLimit"] = "7000000",
        ["FastFiles:MaxCachedFiles"] = "77",
        ["FastFiles:FileCacheRevalidationInterval"] = "00:00:03.5",
        ["FastFiles:MaxOpenFiles"] = "99",
        ["FastFiles:CachedDescriptorMinimumLength"] = "12345",
        ["FastFiles:MaxRanges"] = "3",
        ["FastFiles:BrotliCompressionQuality"] = "4",
        ["FastFiles:GzipCompressionLevel"] = "2",
        ["FastFiles:StaticFiles:RequestPath"] = "/assets/v%C3%A9",
        ["FastFiles:StaticFiles:ServeUnknownFileTypes"] = "true",
        ["FastFiles:StaticFiles:DefaultContentType"] = "application/x-test",
        ["FastFiles:StaticFiles:DefaultFileNames:0"] = "home.html",
        ["FastFiles:StaticFiles:DefaultFileNames:1"] = "index.htm",
        ["FastFiles:StaticFiles:RedirectToAppendTrailingSlash"] = "false",
        ["FastFiles:StaticFiles:ServeDotFiles"] = "true",
        ["FastFiles:StaticFiles:FollowSymlinksOutsideRoot"] = "true",
        ["FastFiles:StaticFiles:EnablePrecompressedFiles"] = "false",
        ["FastFiles:StaticFiles:EnableDynamicCompression"] = "true",
        ["FastFiles:StaticFiles:CompressibleContentTypes:0"] = "text/*",
        ["FastFiles:StaticFiles:CompressibleContentTypes:1"] = "application/json",
        ["FastFiles:StaticFiles:DynamicCompressionMinimumSize"] = "10",
        ["FastFiles:StaticFiles:DynamicCompressionMaximumSize"] = "20000",
        ["FastFiles:StaticFiles:HttpsCompression"] = "DoNotCompress",
        ["FastFiles:StaticFiles:CacheControl"] = "public, max-age=5",
        ["FastFiles:StaticFiles:FingerprintPattern"] = "[.]v[0-9]+[.]",
        ["FastFiles:StaticFiles:EnableContentHashETags"] = "true",
        ["FastFiles:StaticLane:Roots:0:PhysicalPath"] = "/srv/one",
        ["FastFiles:StaticLane:Roots:1:PhysicalPath"] = "/srv/two",
        ["FastFiles:StaticLane:Roots:1:Files:RequestPath"] = "/two",
        ["FastFiles:StaticLane:Roots:1:Files:CacheControl"] = "no-cache",
        ["FastFiles:StaticLane:Roots:1:Files:DefaultFileNames:0"] = "default.html",
        ["FastFiles:StaticLane:Roots:1:Files:HttpsCompression"] = "Compress",
        ["FastFiles:StaticLane:Roots:2:Files:RequestPath"] = "/three",
        ["FastFiles:StaticLane:Roots:2:Files:ServeDotFiles"] = "true",
        ["FastFiles:Kestrel:EnableHttp2TlsOutputStage"] = "true",
        ["FastFiles:Kestrel:Http2TlsOutputStage:Mode"] = "AllProtocols",
        ["FastFiles:Kestrel:Http2TlsOutputStage:MaxBufferSize"] = "131072",
        ["FastFiles:Kestrel:EnableTlsRecordCoalescing"] = "false",
        ["FastFiles:Kestrel:EnableRequestHeaderCache"] = "false",
        ["FastFiles:Kestrel:DescriptorReserve"] = "8",
        ["FastFiles:Kestrel:EnableZeroCopySendFile"] = "true",
        ["FastFiles:Kestrel:ZeroCopySendFile:MinimumLength"] = "4096",
        ["FastFiles:Kestrel:ZeroCopySendFile:CachedMinimumLength"] = "8192",
        ["FastFiles:Kestrel:ZeroCopySendFile:RecentWriteWindow"] = "00:00:02",
        ["FastFiles:Kestrel:EnableStaticLane"] = "true",
    };

    private static IConfigurationRoot Configuration(Dictionary<string, string?> values)
        => new ConfigurationBuilder().AddInMemoryCollection(values).Build();

    // What the reflection binder makes of a section.
    private static T Reflected<T>(IConfiguration section)
        where T : new()
    {
        var options = new T();
        section.Bind(options);
        return options;
    }

    [Fact]
    public void Every_settable_option_has_a_value_in_the_test()
    {
        var missing = new List<string>();
        Collect(typeof(FastFilesOptions), "FastFiles", missing);
        Collect(typeof(FastStaticFileOptions), "FastFiles:StaticFiles", missing);
        Collect(typeof(StaticLaneRootOptions), "FastFiles:StaticLane:Roots:1", missing);
        Collect(typeof(FastFilesKestrelOptions), "FastFiles:Kestrel", missing);
        Assert.Empty(missing);

        static void Collect(Type type, string prefix, List<string> missing)
        {
            foreach (PropertyInfo property in type.GetProperties(BindingFlags.Public | BindingFlags.Instance))
            {
                Type t = property.PropertyType;
                string key = prefix + ":" + property.Name;
                if (typeof(Delegate).IsAssignableFrom(t) || (t.IsInterface && !typeof(IEnumerable).IsAssignableFrom(t)))
                {
                    continue; // code only: file and content type providers, callbacks
                }

                if (t.IsClass && t != typeof(string) && !typeof(IEnumerable).IsAssignableFrom(t) && t.Namespace == "Microsoft.AspNetCore.Builder")
                {
                    if (property.Name != nameof(StaticLaneRootOptions.Files))
                    {
                        Collect(t, key, missing);
                    }

                    continue;
                }

                if (property.SetMethod is not { IsPublic: true } && !typeof(IEnumerable).IsAssignableFrom(t))
                {
                    continue; // computed, read-only
                }

                if (!s_everything.Keys.Any(k => k.Equals(key, StringComparison.OrdinalIgnoreCase) || k.StartsWith(key + ":", StringComparison.OrdinalIgnoreCase)))
                {
                    missing.Add(key);
                }
            }
        }
    }

    [Fact]
    public void AddFastFiles_binds_the_application_configuration_as_the_reflection_binder()
    {
        IConfigurationRoot configuration = Configuration(s_everything);
        using ServiceProvider services = new ServiceCollection().AddSingleton<IConfiguration>(configuration).AddFastFiles().BuildServiceProvider();
        AssertSame(Reflected<FastFilesOptions>(configuration.GetSection("FastFiles")), services.GetRequiredService<IOptions<FastFilesOptions>>().Value);
        AssertSame(Reflected<FastStaticFileOptions>(configuration.GetSection("FastFiles:StaticFiles")), services.GetRequiredService<IOptions<FastStaticFileOptions>>().Value);
        StaticLaneOptions lane = services.GetRequiredService<IOptions<StaticLaneOptions>>().Value;
        AssertSame(Reflected<StaticLaneOptions>(configuration.GetSection("FastFiles:StaticLane")), lane);
        Assert.Equal(3, lane.Roots.Count);
        Assert.Equal(new PathString("/three"), lane.Roots[2].Files!.RequestPath);
    }

    [Fact]
    public void AddFastFiles_with_a_section_binds_it_as_the_reflection_binder()
    {
        IConfigurationSection section = Configuration(s_everything).GetSection("FastFiles");
        using ServiceProvider services = new ServiceCollection().AddFastFiles(section).BuildServiceProvider();
        AssertSame(Reflected<FastFilesOptions>(section), services.GetRequiredService<IOptions<FastFilesOptions>>().Value);
        AssertSame(Reflected<FastStaticFileOptions>(section.GetSection("StaticFiles")), services.GetRequiredService<IOptions<FastStaticFileOptions>>().Value);
        AssertSame(Reflected<StaticLaneOptions>(section.GetSection("StaticLane")), services.GetRequiredService<IOptions<StaticLaneOptions>>().Value);
    }

    [Fact]
    public void Options_bound_without_AddFastFiles_match_the_reflection_binder()
    {
        IConfigurationRoot configuration = Configuration(s_everything);
        using ServiceProvider services = new ServiceCollection().AddSingleton<IConfiguration>(configuration).AddOptions().BuildServiceProvider();
        AssertSame(Reflected<FastFilesOptions>(configuration.GetSection("FastFiles")), FastFilesOptionsSource.Resolve<FastFilesOptions>(services, "FastFiles", FastFilesConfiguration.Bind));
        AssertSame(Reflected<FastStaticFileOptions>(configuration.GetSection("FastFiles:StaticFiles")), FastFilesOptionsSource.Resolve<FastStaticFileOptions>(services, "FastFiles:StaticFiles", FastFilesConfiguration.Bind));
        AssertSame(Reflected<StaticLaneOptions>(configuration.GetSection("FastFiles:StaticLane")), FastFilesOptionsSource.Resolve<StaticLaneOptions>(services, "FastFiles:StaticLane", FastFilesConfiguration.Bind));
    }

    [Fact]
    public void Kestrel_options_match_the_reflection_binder()
    {
        IConfigurationSection section = Configuration(s_everything).GetSection("FastFiles:Kestrel");
        var generated = new FastFilesKestrelOptions();
        FastFilesConfiguration.Bind(section, generated);
        AssertSame(Reflected<FastFilesKestrelOptions>(section), generated);
        Assert.Equal(Http2TlsOutputStageMode.AllProtocols, generated.Http2TlsOutputStage.Mode);
    }

    [Theory]
    [InlineData("FastFiles:StaticFiles:RequestPath", "assets")]
    [InlineData("FastFiles:BufferSize", "lots")]
    [InlineData("FastFiles:FileCacheRevalidationInterval", "soon")]
    [InlineData("FastFiles:StaticFiles:HttpsCompression", "Sometimes")]
    [InlineData("FastFiles:StaticFiles:ServeDotFiles", "maybe")]
    public void A_bad_value_fails_as_with_the_reflection_binder(string key, string value)
    {
        IConfigurationRoot configuration = Configuration(new() { [key] = value });
        using ServiceProvider services = new ServiceCollection().AddSingleton<IConfiguration>(configuration).AddFastFiles().BuildServiceProvider();
        Exception generated = Assert.ThrowsAny<Exception>(() =>
        {
            _ = services.GetRequiredService<IOptions<FastFilesOptions>>().Value;
            _ = services.GetRequiredService<IOptions<FastStaticFileOptions>>().Value;
            _ = services.GetRequiredService<IOptions<StaticLaneOptions>>().Value;
        });
        Exception reflected = Assert.ThrowsAny<Exception>(() =>
        {
            Reflected<FastFilesOptions>(configuration.GetSection("FastFiles"));
            Reflected<FastStaticFileOptions>(configuration.GetSection("FastFiles:StaticFiles"));
            Reflected<StaticLaneOptions>(configuration.GetSection("FastFiles:StaticLane"));
        });
        Assert.IsType(reflected.GetType(), generated);
        Assert.Equal(reflected.Message, generated.Message);
        Assert.Contains(key, generated.Message, StringComparison.Ordinal);
    }

    // An empty value for a number, a time or an enum (FastFiles__MaxOpenFiles= in the environment) leaves the option at its
    // default with the generated binding; the reflection binder failed the host on it.
    [Theory]
    [InlineData("FastFiles:MaxOpenFiles")]
    [InlineData("FastFiles:FileCacheRevalidationInterval")]
    [InlineData("FastFiles:StaticFiles:HttpsCompression")]
    public void An_empty_value_keeps_the_default(string key)
    {
        IConfigurationRoot configuration = Configuration(new() { [key] = "" });
        Assert.ThrowsAny<InvalidOperationException>(() =>
        {
            Reflected<FastFilesOptions>(configuration.GetSection("FastFiles"));
            Reflected<FastStaticFileOptions>(configuration.GetSection("FastFiles:StaticFiles"));
        });
        using ServiceProvider services = new ServiceCollection().AddSingleton<IConfiguration>(configuration).AddFastFiles().BuildServiceProvider();
        FastFilesOptions fast = services.GetRequiredService<IOptions<FastFilesOptions>>().Value;
        FastStaticFileOptions files = services.GetRequiredService<IOptions<FastStaticFileOptions>>().Value;
        Assert.Equal(new FastFilesOptions().MaxOpenFiles, fast.MaxOpenFiles);
        Assert.Equal(new FastFilesOptions().FileCacheRevalidationInterval, fast.FileCacheRevalidationInterval);
        Assert.Equal(new FastStaticFileOptions().HttpsCompression, files.HttpsCompression);
    }

    // The reflection binder skipped a collection item that failed to bind: a lane root with a bad value was silently
    // dropped (and with it, files the app meant to serve). The generated binding stops at it, naming the key.
    [Theory]
    [InlineData("FastFiles:StaticLane:Roots:0:Files:RequestPath", "lane")]
    [InlineData("FastFiles:StaticLane:Roots:0:Files:ServeDotFiles", "maybe")]
    public void A_bad_value_in_a_lane_root_stops_instead_of_dropping_the_root(string key, string value)
    {
        IConfigurationRoot configuration = Configuration(new() { [key] = value, ["FastFiles:StaticLane:Roots:0:PhysicalPath"] = "/srv" });
        Assert.Empty(Reflected<StaticLaneOptions>(configuration.GetSection("FastFiles:StaticLane")).Roots);
        using ServiceProvider services = new ServiceCollection().AddSingleton<IConfiguration>(configuration).AddFastFiles().BuildServiceProvider();
        var error = Assert.Throws<InvalidOperationException>(() => services.GetRequiredService<IOptions<StaticLaneOptions>>().Value);
        Assert.Equal($"Failed to convert configuration value '{value}' at '{key}' to type '{(key.EndsWith("RequestPath", StringComparison.Ordinal) ? typeof(PathString) : typeof(bool))}'.", error.Message);
    }

    // Property by property, into lists and nested options; code-only members (providers, callbacks) by type.
    private static void AssertSame(object? expected, object? actual, string path = "")
    {
        if (expected is null || actual is null)
        {
            Assert.True(expected is null && actual is null, $"{path}: {expected ?? "null"} against {actual ?? "null"}");
            return;
        }

        Type type = expected.GetType();
        Assert.Equal(type, actual.GetType());
        if (type.IsPrimitive || type.IsEnum || expected is string or TimeSpan or PathString or decimal)
        {
            Assert.True(Equals(expected, actual), $"{path}: {expected} against {actual}");
            return;
        }

        if (expected is IList expectedList)
        {
            var actualList = (IList)actual;
            Assert.True(expectedList.Count == actualList.Count, $"{path}: {expectedList.Count} items against {actualList.Count}");
            for (int i = 0; i < expectedList.Count; i++)
            {
                AssertSame(expectedList[i], actualList[i], $"{path}[{i}]");
            }

            return;
        }

        if (type.Namespace is not ("Microsoft.AspNetCore.Builder" or "FastFiles.Diagnostics"))
        {
            return; // a provider or callback: same type is all configuration can decide
        }

        foreach (PropertyInfo property in type.GetProperties(BindingFlags.Public | BindingFlags.Instance))
        {
            if (property.GetIndexParameters().Length == 0 && !typeof(Delegate).IsAssignableFrom(property.PropertyType))
            {
                AssertSame(property.GetValue(expected), property.GetValue(actual), $"{path}.{property.Name}");
            }
        }
    }
}
