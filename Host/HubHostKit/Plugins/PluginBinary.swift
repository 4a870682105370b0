import Foundation

/// A plugin library opened to test its plugins one at a time (`hubhost plugins test`,
/// PluginTestKit): a `.so` through the host's loader, or a `.wasm` module read and described as the
/// registry reads it. Either way a plugin is created into a PluginHandle, so the kind adapters
/// drive both alike.
package enum PluginBinary: Sendable {
    case native(PluginLibrary)
    /// The parsed module and what its hh_wasm_describe answered.
    case wasm(WasmModuleFile, WasmPluginInstance.Description)

    /// Opens the library at `path`: a `.wasm` is parsed and described (its start-up and
    /// hh_wasm_describe run under the default budget), anything else is checked and dlopened from
    /// its sealed copy, or from the file itself with `mappingFile` (LibraryImage.inPlace: for the
    /// leak check's private copy, whose symbols valgrind must read).
    package static func open(path: String, mappingFile: Bool = false) throws -> PluginBinary {
        guard path.hasSuffix(".wasm") else {
            if mappingFile { return .native(try PluginLibrary.open(try LibraryImage.read(path: path).inPlace())) }
            return .native(try PluginLibrary.open(path: path))
        }
        let file = try WasmModuleFile.read(path: path)
        return .wasm(file, try WasmPluginInstance.describe(file))
    }

    package var isWasm: Bool {
        if case .wasm = self { return true }
        return false
    }

    /// The library's ABI version, as its entry point says.
    package var abiVersion: ABIVersion {
        switch self {
        case .native(let library): return library.abiVersion
        case .wasm(_, let description): return description.abi
        }
    }

    /// Every plugin the library exports, in its order.
    package var exports: [(id: String, kind: PluginKind, version: String)] {
        switch self {
        case .native(let library): return library.descriptors.map { ($0.id, $0.kind, $0.version) }
        case .wasm(_, let description): return description.plugins.map { ($0.id, $0.kind, $0.version) }
        }
    }

    /// How the library disagrees with `manifest` (ids, kinds, versions, ABI); empty when it agrees.
    package func disagreements(with manifest: PluginManifest) -> [String] {
        PluginLibrary.disagreements(abiVersion: abiVersion, exported: exports, with: manifest)
    }

    /// Creates the plugin `id` as instance `instanceID`. A `.wasm` plugin gets a module instance of
    /// its own under the default fuel and memory budget and `environment`'s HTTP policy (the other
    /// host extensions do not reach a guest). Throws PluginLoadError as the registry would.
    package func create(
        _ id: String, instanceID: String, config: [String: PluginValue], dataDirectory: String, pipeline: LogPipeline,
        environment: HostEnvironment
    ) throws -> PluginHandle {
        switch self {
        case .native(let library):
            guard let descriptor = library.descriptors.first(where: { $0.id == id }) else {
                throw PluginLoadError.manifestMismatch(path: library.path, reason: "the library exports no plugin '\(id)'")
            }
            return PluginHandle(
                try PluginInstance.create(
                    descriptor, of: library, instanceID: instanceID, config: config, dataDirectory: dataDirectory, pipeline: pipeline,
                    environment: environment))
        case .wasm(let file, _):
            let instance = try WasmPluginInstance(
                file: file, creating: [id], instanceID: instanceID, config: config, pipeline: pipeline, http: environment.http)
            return PluginHandle(wasm: instance, index: 0)
        }
    }
}
