using System.Collections.Immutable;
using System.Reflection;
using System.Reflection.Emit;
using System.Reflection.Metadata;
using System.Reflection.Metadata.Ecma335;
using System.Reflection.PortableExecutable;
using FastFiles.Caching;
using FastFiles.Diagnostics;
using FastFiles.Files;
using FastFiles.Http;
using FastFiles.Responses;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace FastFiles.Tests;

/// <summary>
/// Keeps the layers one-way (README "Architecture"): reads FastFiles.dll's metadata and fails when a type references
/// a type of a higher layer, or of a sibling feature, through its base type, interfaces, fields, method signatures,
/// locals or any token in a method body (calls, field accesses, type tests, generic instantiations).
/// </summary>
public sealed class LayeringTests
{
    // Lowest first. A type may reference its own layer and lower ones; the feature layers share a rank and do not
    // reference each other.
    private static readonly (string Layer, int Rank)[] Layers =
    [
        ("Options", 0),
        ("FastFiles.Files", 1),
        ("FastFiles.Http", 2),
        ("FastFiles.IO", 3),
        ("FastFiles.Diagnostics", 4),
        ("FastFiles.Caching", 5),
        ("FastFiles.Responses", 6),
        ("FastFiles.StaticFiles", 7),
        ("FastFiles.Results", 7),
        ("FastFiles.SendFile", 7),
        ("FastFiles.Connections", 7),
        ("FastFiles.Hosting", 8),
    ];

    // Public types declare framework namespaces (NAMESPACES.md), so their layer is named here. Public types not listed
    // are extension classes: the Hosting layer.
    private static readonly Dictionary<string, string> PublicTypeLayers = new(StringComparer.Ordinal)
    {
        ["Microsoft.AspNetCore.Builder.FastFilesOptions"] = "Options",
        ["Microsoft.AspNetCore.Builder.FastFileResponseContext"] = "Options",
        ["Microsoft.AspNetCore.Builder.FastStaticFileOptions"] = "FastFiles.StaticFiles",
        ["Microsoft.AspNetCore.Builder.StaticLaneOptions"] = "FastFiles.StaticFiles",
        ["Microsoft.AspNetCore.Builder.StaticLaneRootOptions"] = "FastFiles.StaticFiles",
        ["Microsoft.AspNetCore.Http.IFastFilesFingerprinter"] = "FastFiles.StaticFiles",
        ["Microsoft.AspNetCore.Builder.FastFilesKestrelOptions"] = "FastFiles.Connections",
        ["Microsoft.AspNetCore.Builder.Http2TlsOutputStageOptions"] = "FastFiles.Connections",
        ["Microsoft.AspNetCore.Builder.Http2TlsOutputStageMode"] = "FastFiles.Connections",
        ["Microsoft.AspNetCore.Builder.ZeroCopySendFileOptions"] = "FastFiles.Connections",
        ["Microsoft.AspNetCore.Http.FastResults"] = "FastFiles.Results",
        ["Microsoft.AspNetCore.Http.FastPhysicalFileResult"] = "FastFiles.Results",
    };

    // Emitted by the compiler, not written by us.
    private static readonly string[] CompilerNamespaces = ["", "Microsoft.CodeAnalysis", "System.Runtime.CompilerServices", "System.Text.RegularExpressions.Generated", "Microsoft.Extensions.Configuration.Binder.SourceGeneration"];

    [Fact]
    public void Every_type_has_a_layer()
    {
        using var assembly = new AssemblyMetadata(typeof(FastFilesOptions).Assembly.Location);
        var unplaced = assembly.TopLevelTypes().Where(t => assembly.LayerOf(t) is null && !assembly.IsCompilerGenerated(t))
            .Select(assembly.NameOf).ToList();
        Assert.True(unplaced.Count == 0, "types in no layer (give them a layer's namespace, or list public ones in PublicTypeLayers): " + string.Join(", ", unplaced));
    }

    [Fact]
    public void Lower_layers_never_reference_higher_ones()
    {
        using var assembly = new AssemblyMetadata(typeof(FastFilesOptions).Assembly.Location);
        List<string> violations = assembly.Violations();
        Assert.True(violations.Count == 0, "references against the layering:\n" + string.Join("\n", violations));
    }

    [Fact]
    public void The_check_sees_references_in_signatures_and_method_bodies()
    {
        // The rules above are only as good as the reference scan: it must find known references of every kind.
        using var assembly = new AssemblyMetadata(typeof(FastFilesOptions).Assembly.Location);
        // FileCache : ICacheGauges (interface), holds PhysicalFileSource (field), calls FastFilesMetrics.Hit (body).
        HashSet<string> cache = assembly.ReferencedTypeNames("FastFiles.Caching.FileCache");
        Assert.Contains("FastFiles.Diagnostics.ICacheGauges", cache);
        Assert.Contains("FastFiles.Files.PhysicalFileSource", cache);
        Assert.Contains("FastFiles.Diagnostics.FastFilesMetrics", cache);
        // A static call inside an async method body (the state machine is nested in FileResponder).
        Assert.Contains("FastFiles.Http.FileResponsePlan", assembly.ReferencedTypeNames("FastFiles.Responses.FileResponder"));
        // A generic instantiation over one of our types, used only inside a method body.
        Assert.Contains("FastFiles.Diagnostics.ICacheGauges", assembly.ReferencedTypeNames("FastFiles.Diagnostics.FastFilesMetrics"));
    }

    [Fact]
    public void A_reference_upwards_is_reported()
    {
        // Judge a real reference (Responses -> Http) with the two layers' ranks swapped: it must be reported.
        using var assembly = new AssemblyMetadata(typeof(FastFilesOptions).Assembly.Location);
        List<string> violations = assembly.Violations(swap: ("FastFiles.Http", "FastFiles.Responses"));
        Assert.Contains(violations, v => v.StartsWith("FastFiles.Responses.FileResponder (FastFiles.Responses) -> FastFiles.Http.", StringComparison.Ordinal));
    }

    private sealed class AssemblyMetadata : IDisposable
    {
        private static readonly Dictionary<short, OperandType> OperandTypes = typeof(OpCodes)
            .GetFields(BindingFlags.Public | BindingFlags.Static)
            .Select(f => (OpCode)f.GetValue(null)!)
            .ToDictionary(o => o.Value, o => o.OperandType);

        private readonly PEReader _pe;
        private readonly MetadataReader _reader;

        public AssemblyMetadata(string path)
        {
            _pe = new PEReader(File.OpenRead(path));
            _reader = _pe.GetMetadataReader();
        }

        public void Dispose() => _pe.Dispose();

        public IEnumerable<TypeDefinitionHandle> TopLevelTypes()
            => _reader.TypeDefinitions.Where(h => _reader.GetTypeDefinition(h).GetDeclaringType().IsNil && NameOf(h) != "<Module>");

        public string NameOf(TypeDefinitionHandle handle)
        {
            TypeDefinition type = _reader.GetTypeDefinition(handle);
            string ns = _reader.GetString(type.Namespace);
            return ns.Length == 0 ? _reader.GetString(type.Name) : ns + "." + _reader.GetString(type.Name);
        }

        public bool IsCompilerGenerated(TypeDefinitionHandle handle)
            => CompilerNamespaces.Contains(_reader.GetString(_reader.GetTypeDefinition(handle).Namespace));

        public string? LayerOf(TypeDefinitionHandle handle)
        {
            TypeDefinition type = _reader.GetTypeDefinition(handle);
            string ns = _reader.GetString(type.Namespace);
            // A sub-namespace (FastFiles.Connections.SendPath) belongs to its layer.
            foreach ((string layer, _) in Layers)
            {
                if (ns == layer || ns.StartsWith(layer + ".", StringComparison.Ordinal))
                {
                    return layer;
                }
            }

            if (PublicTypeLayers.TryGetValue(NameOf(handle), out string? listed))
            {
                return listed;
            }

            bool isPublic = (type.Attributes & TypeAttributes.VisibilityMask) == TypeAttributes.Public;
            return isPublic && ns.StartsWith("Microsoft.", StringComparison.Ordinal) ? "FastFiles.Hosting" : null;
        }

        public List<string> Violations((string A, string B)? swap = null)
        {
            int RankOf(string layer)
            {
                string effective = swap is { } s ? (layer == s.A ? s.B : layer == s.B ? s.A : layer) : layer;
                return Layers.First(l => l.Layer == effective).Rank;
            }

            var violations = new List<string>();
            foreach (TypeDefinitionHandle type in TopLevelTypes())
            {
                if (LayerOf(type) is not { } from)
                {
                    continue;
                }

                foreach (TypeDefinitionHandle target in References(type))
                {
                    if (LayerOf(target) is not { } to || to == from)
                    {
                        continue;
                    }

                    if (RankOf(to) >= RankOf(from))
                    {
                        violations.Add($"{NameOf(type)} ({from}) -> {NameOf(target)} ({to})");
                    }
                }
            }

            return violations.Distinct().Order(StringComparer.Ordinal).ToList();
        }

        public HashSet<string> ReferencedTypeNames(string fullName)
        {
            TypeDefinitionHandle type = TopLevelTypes().Single(h => NameOf(h) == fullName);
            return References(type).Select(NameOf).ToHashSet();
        }

        // Top-level types of this assembly that a top-level type (with its nested types: closures, state machines)
        // references.
        private HashSet<TypeDefinitionHandle> References(TypeDefinitionHandle topLevel)
        {
            var collector = new Collector(_reader);
            foreach (TypeDefinitionHandle handle in WithNested(topLevel))
            {
                TypeDefinition type = _reader.GetTypeDefinition(handle);
                collector.AddType(type.BaseType);
                foreach (InterfaceImplementationHandle i in type.GetInterfaceImplementations())
                {
                    collector.AddType(_reader.GetInterfaceImplementation(i).Interface);
                }

                foreach (FieldDefinitionHandle f in type.GetFields())
                {
                    _reader.GetFieldDefinition(f).DecodeSignature(collector, null);
                }

                foreach (MethodDefinitionHandle m in type.GetMethods())
                {
                    MethodDefinition method = _reader.GetMethodDefinition(m);
                    method.DecodeSignature(collector, null);
                    if (method.RelativeVirtualAddress != 0)
                    {
                        ScanBody(_pe.GetMethodBody(method.RelativeVirtualAddress), collector);
                    }
                }
            }

            return collector.Found.Select(TopLevelOf).Where(h => h != topLevel).ToHashSet();
        }

        private IEnumerable<TypeDefinitionHandle> WithNested(TypeDefinitionHandle handle)
        {
            yield return handle;
            foreach (TypeDefinitionHandle nested in _reader.GetTypeDefinition(handle).GetNestedTypes())
            {
                foreach (TypeDefinitionHandle inner in WithNested(nested))
                {
                    yield return inner;
                }
            }
        }

        private TypeDefinitionHandle TopLevelOf(TypeDefinitionHandle handle)
        {
            while (_reader.GetTypeDefinition(handle).GetDeclaringType() is { IsNil: false } outer)
            {
                handle = outer;
            }

            return handle;
        }

        private void ScanBody(MethodBodyBlock body, Collector collector)
        {
            if (!body.LocalSignature.IsNil)
            {
                _reader.GetStandaloneSignature(body.LocalSignature).DecodeLocalSignature(collector, null);
            }

            ImmutableArray<byte> il = body.GetILContent();
            int i = 0;
            while (i < il.Length)
            {
                short value = il[i++];
                if (value == 0xFE)
                {
                    value = unchecked((short)(0xFE00 | il[i++]));
                }

                OperandType operand = OperandTypes[value];
                switch (operand)
                {
                    case OperandType.InlineField or OperandType.InlineMethod or OperandType.InlineTok or OperandType.InlineType:
                        collector.AddToken(BitConverter.ToInt32(il.AsSpan(i, 4)));
                        i += 4;
                        break;
                    case OperandType.InlineSwitch:
                        i += 4 + (4 * BitConverter.ToInt32(il.AsSpan(i, 4)));
                        break;
                    case OperandType.InlineNone:
                        break;
                    case OperandType.ShortInlineBrTarget or OperandType.ShortInlineI or OperandType.ShortInlineVar:
                        i += 1;
                        break;
                    case OperandType.InlineVar:
                        i += 2;
                        break;
                    case OperandType.InlineI8 or OperandType.InlineR:
                        i += 8;
                        break;
                    default:
                        i += 4;
                        break;
                }
            }
        }
    }

    // Collects this assembly's type definitions met while decoding signatures and method-body tokens.
    private sealed class Collector(MetadataReader reader) : ISignatureTypeProvider<object?, object?>
    {
        public HashSet<TypeDefinitionHandle> Found { get; } = [];

        public void AddType(EntityHandle handle)
        {
            if (handle.IsNil)
            {
                return;
            }

            switch (handle.Kind)
            {
                case HandleKind.TypeDefinition:
                    Found.Add((TypeDefinitionHandle)handle);
                    break;
                case HandleKind.TypeSpecification:
                    reader.GetTypeSpecification((TypeSpecificationHandle)handle).DecodeSignature(this, null);
                    break;
            }
        }

        public void AddToken(int token)
        {
            EntityHandle handle = MetadataTokens.EntityHandle(token);
            switch (handle.Kind)
            {
                case HandleKind.TypeDefinition or HandleKind.TypeSpecification:
                    AddType(handle);
                    break;
                case HandleKind.MethodDefinition:
                    Found.Add(reader.GetMethodDefinition((MethodDefinitionHandle)handle).GetDeclaringType());
                    break;
                case HandleKind.FieldDefinition:
                    Found.Add(reader.GetFieldDefinition((FieldDefinitionHandle)handle).GetDeclaringType());
                    break;
                case HandleKind.MemberReference:
                    MemberReference member = reader.GetMemberReference((MemberReferenceHandle)handle);
                    AddType(member.Parent);
                    break;
                case HandleKind.MethodSpecification:
                    MethodSpecification spec = reader.GetMethodSpecification((MethodSpecificationHandle)handle);
                    AddToken(MetadataTokens.GetToken(spec.Method));
                    spec.DecodeSignature(this, null);
                    break;
            }
        }

        public object? GetTypeFromDefinition(MetadataReader metadata, TypeDefinitionHandle handle, byte rawTypeKind)
        {
            Found.Add(handle);
            return null;
        }

        public object? GetTypeFromSpecification(MetadataReader metadata, object? genericContext, TypeSpecificationHandle handle, byte rawTypeKind)
            => metadata.GetTypeSpecification(handle).DecodeSignature(this, genericContext);

        public object? GetTypeFromReference(MetadataReader metadata, TypeReferenceHandle handle, byte rawTypeKind) => null;

        public object? GetArrayType(object? elementType, ArrayShape shape) => null;

        public object? GetByReferenceType(object? elementType) => null;

        public object? GetFunctionPointerType(MethodSignature<object?> signature) => null;

        public object? GetGenericInstantiation(object? genericType, ImmutableArray<object?> typeArguments) => null;

        public object? GetGenericMethodParameter(object? genericContext, int index) => null;

        public object? GetGenericTypeParameter(object? genericContext, int index) => null;

        public object? GetModifiedType(object? modifier, object? unmodifiedType, bool isRequired) => null;

        public object? GetPinnedType(object? elementType) => null;

        public object? GetPointerType(object? elementType) => null;

        public object? GetPrimitiveType(PrimitiveTypeCode typeCode) => null;

        public object? GetSZArrayType(object? elementType) => null;
    }
}
