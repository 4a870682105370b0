import Foundation
import HubHostKit

/// What `hubhost plugins inspect` reports: the plugin.yaml read without loading the binary, then,
/// if the binary loads, what it declares and whether the two agree.
public struct PluginInspection: Encodable, Sendable {
    public struct ManifestPart: Encodable, Sendable {
        public var file: String
        public var id: String
        public var name: String
        public var version: String
        public var abi: String
        public var library: String
        public var description: String
        public var capabilities: [String]
        public var exports: [PluginManifest.Export]
        package var config: [ConfigKey]
    }

    public struct BinaryPart: Encodable, Sendable {
        public struct Plugin: Encodable, Sendable {
            public var id: String
            public var name: String
            public var kind: PluginKind
            public var version: String
            public var description: String
        }
        public var path: String
        public var abi: String
        public var sha256: String?
        public var plugins: [Plugin]
        /// A `.wasm` module's imports and exports as it declares them (read without running it).
        public var wasmImports: [String]?
        public var wasmExports: [String]?
    }

    /// The path the user gave.
    public var path: String
    public var manifest: ManifestPart?
    public var manifestProblems: [ManifestDiagnostic]
    public var binary: BinaryPart?
    /// Why the binary was not loaded (not found, not a shared object, ABI mismatch...).
    public var binaryProblem: String?
    /// Differences between binary and manifest; empty when they agree or one is missing.
    public var disagreements: [String]

    /// True when everything that is present is sound and the two agree.
    public var isConsistent: Bool {
        manifestProblems.isEmpty && binaryProblem == nil && disagreements.isEmpty && (manifest != nil || binary != nil)
    }

    /// Inspects a plugin.yaml or a shared library. A `.so` given alone is matched with a
    /// plugin.yaml beside it when there is one whose `library` names it.
    public static func inspect(path: String, locator: LibraryLocator = LibraryLocator()) -> PluginInspection {
        let absolute = HostManifest.absolute(path, from: FileManager.default.currentDirectoryPath)
        var result = PluginInspection(path: path, manifest: nil, manifestProblems: [], binary: nil, binaryProblem: nil, disagreements: [])
        var libraryPath: String?
        var manifest: PluginManifest?
        if LocatedManifest.isManifest(absolute) {
            let located = LocatedManifest(path: absolute, locator: locator)
            manifest = located.manifest
            result.manifestProblems = located.problems
            libraryPath = located.libraryPath
            result.binaryProblem = located.libraryProblem
        } else {
            guard FileManager.default.fileExists(atPath: absolute) else {
                result.binaryProblem = "no such file: \(absolute)"
                return result
            }
            libraryPath = absolute
            let beside = ((absolute as NSString).deletingLastPathComponent as NSString).appendingPathComponent("plugin.yaml")
            if let candidate = PluginManifest.load(path: beside).manifest,
                candidate.library == (absolute as NSString).lastPathComponent
            {
                manifest = candidate
            }
        }
        if let manifest {
            result.manifest = ManifestPart(
                file: manifest.file, id: manifest.id, name: manifest.name, version: manifest.version,
                abi: manifest.abi, library: manifest.library, description: manifest.description,
                capabilities: manifest.capabilities, exports: manifest.exports, config: manifest.config.keys)
        }
        if let libraryPath, libraryPath.hasSuffix(".wasm") {
            do {
                let file = try WasmModuleFile.read(path: libraryPath)
                let described = try WasmPluginInstance.describe(file)
                result.binary = BinaryPart(
                    path: libraryPath, abi: (file.abiVersion ?? described.abi).description, sha256: LibraryFile.sha256(path: libraryPath),
                    plugins: described.plugins.map {
                        .init(id: $0.id, name: $0.name, kind: $0.kind, version: $0.version, description: $0.description)
                    },
                    wasmImports: file.imports.map(\.description), wasmExports: file.exports.map(\.description))
                if let manifest {
                    result.disagreements = PluginLibrary.disagreements(
                        abiVersion: described.abi, exported: described.plugins.map { ($0.id, $0.kind, $0.version) }, with: manifest)
                }
            } catch {
                result.binaryProblem = "\(error)"
            }
        } else if let libraryPath {
            do {
                let library = try PluginLibrary.open(path: libraryPath)
                result.binary = BinaryPart(
                    path: library.path, abi: library.abiVersion.description, sha256: library.image.sha256,
                    plugins: library.descriptors.map {
                        .init(id: $0.id, name: $0.name, kind: $0.kind, version: $0.version, description: $0.description)
                    })
                if let manifest { result.disagreements = library.disagreements(with: manifest) }
            } catch {
                result.binaryProblem = "\(error)"
            }
        }
        return result
    }
}
