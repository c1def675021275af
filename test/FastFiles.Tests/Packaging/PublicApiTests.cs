using System.Reflection;

namespace FastFiles.Tests.Packaging;

/// <summary>
/// The public surface as README's Architecture section describes it: public types only in the namespaces ASP.NET Core
/// apps already import (so a <c>dotnet new web</c> app needs no <c>using</c>), no public static state a caller could
/// change, and every non-public class sealed, static or an abstract base.
/// </summary>
public sealed class PublicApiTests
{
    private static readonly Assembly Library = typeof(Microsoft.Extensions.DependencyInjection.FastFilesServiceCollectionExtensions).Assembly;

    [Fact]
    public void Public_types_live_in_the_namespaces_web_apps_import_implicitly()
    {
        string[] implicitUsings = ["Microsoft.AspNetCore.Builder", "Microsoft.AspNetCore.Hosting", "Microsoft.AspNetCore.Http", "Microsoft.Extensions.DependencyInjection"];
        Assert.Empty(Library.GetExportedTypes().Where(t => !implicitUsings.Contains(t.Namespace)).Select(t => t.FullName));
    }

    [Fact]
    public void Public_types_expose_no_mutable_static_state()
    {
        var mutable = new List<string>();
        foreach (Type type in Library.GetExportedTypes())
        {
            mutable.AddRange(type.GetFields(BindingFlags.Public | BindingFlags.Static).Where(f => !f.IsLiteral && !f.IsInitOnly).Select(f => $"{type.Name}.{f.Name}"));
            mutable.AddRange(type.GetProperties(BindingFlags.Public | BindingFlags.Static).Where(p => p.SetMethod?.IsPublic == true).Select(p => $"{type.Name}.{p.Name}"));
            foreach (FieldInfo field in type.GetFields(BindingFlags.Public | BindingFlags.Static).Where(f => f.IsInitOnly))
            {
                // A read-only field of a collection type must not hand out a collection that can be changed.
                if (field.GetValue(null) is System.Collections.IList { IsReadOnly: false })
                {
                    mutable.Add($"{type.Name}.{field.Name} (a mutable list)");
                }
            }
        }

        Assert.Empty(mutable);
    }

    [Fact]
    public void Non_public_classes_are_sealed_static_or_abstract()
    {
        IEnumerable<string> open = Library.GetTypes()
            .Where(t => t.IsClass && !t.IsVisible && !t.IsSealed && !t.IsAbstract)
            .Where(t => !typeof(Delegate).IsAssignableFrom(t) && !t.IsDefined(typeof(System.Runtime.CompilerServices.CompilerGeneratedAttribute)))
            .Where(t => t.Namespace?.StartsWith("FastFiles", StringComparison.Ordinal) == true || t.Namespace?.StartsWith("Microsoft.", StringComparison.Ordinal) == true)
            .Where(t => !t.FullName!.Contains('<', StringComparison.Ordinal))
            .Select(t => t.FullName!);
        Assert.Empty(open);
    }
}
