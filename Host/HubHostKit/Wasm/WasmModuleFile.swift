import Foundation
@_spi(Fuzzing) import WasmKit
import WasmParser

/// A `.wasm` plugin file, parsed and validated but not run: what `plugins inspect` shows (its
/// imports, its exports, the ABI version in its `hubhost_abi` custom section) and the module the
/// instances are made from. Parsing once per load keeps a reload of an unchanged file cheap.
package struct WasmModuleFile: Sendable {
    /// One import or export, as the module declares it.
    package struct Item: Sendable, Equatable, CustomStringConvertible {
        /// "func", "memory", "table", "global" or "tag".
        package var kind: String
        /// "module.name" for an import, the name for an export.
        package var name: String
        /// An imported function's signature, e.g. "(i32, i32) -> (i64)"; empty otherwise.
        package var signature: String

        package var description: String { signature.isEmpty ? "\(kind) \(name)" : "\(kind) \(name) \(signature)" }
    }

    package let path: String
    let module: Module
    /// The ABI version the guest adapter was compiled against, or nil without a `hubhost_abi` section.
    package let abiVersion: ABIVersion?
    package let imports: [Item]
    package let exports: [Item]

    /// The custom section naming the ABI version: three little-endian u32 (major, minor, patch).
    static let abiSectionName = "hubhost_abi"

    /// Reads and parses the module at `path`. Throws `.notAWasmPlugin` for a file that is not a
    /// WebAssembly module.
    package static func read(path: String) throws -> WasmModuleFile {
        try parse(try LibraryFile.read(path: path), path: path)
    }

    /// Parses `bytes`, the content of the module file at `path`.
    package static func parse(_ bytes: [UInt8], path: String) throws -> WasmModuleFile {
        let module: Module
        do {
            module = try parseWasm(bytes: bytes, features: .default)
        } catch {
            throw PluginLoadError.notAWasmPlugin(path: path, reason: "not a WebAssembly module: \(error)")
        }
        return WasmModuleFile(path: path, module: module)
    }

    private init(path: String, module: Module) {
        self.path = path
        self.module = module
        abiVersion = module.customSections.first { $0.name == Self.abiSectionName }.flatMap { section in
            let bytes = Array(section.bytes)
            guard bytes.count >= 12 else { return nil }
            func u32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
            return ABIVersion(major: u32(0), minor: u32(4), patch: u32(8))
        }
        imports = module.imports.map { item in
            switch item.descriptor {
            case .function(let index):
                return Item(
                    kind: "func", name: "\(item.module).\(item.name)",
                    signature: module.functionType(at: index).map(Self.signature) ?? "")
            case .table: return Item(kind: "table", name: "\(item.module).\(item.name)", signature: "")
            case .memory: return Item(kind: "memory", name: "\(item.module).\(item.name)", signature: "")
            case .global: return Item(kind: "global", name: "\(item.module).\(item.name)", signature: "")
            case .tag: return Item(kind: "tag", name: "\(item.module).\(item.name)", signature: "")
            }
        }
        exports = module.exports.map { item in
            switch item.descriptor {
            // An export's signature needs the code section's types, which WasmKit keeps to itself:
            // the loader checks the hh_wasm_* signatures on the instance instead.
            case .function: return Item(kind: "func", name: item.name, signature: "")
            case .table: return Item(kind: "table", name: item.name, signature: "")
            case .memory: return Item(kind: "memory", name: item.name, signature: "")
            case .global: return Item(kind: "global", name: item.name, signature: "")
            case .tag: return Item(kind: "tag", name: item.name, signature: "")
            }
        }
    }

    /// "(i32, i32) -> (i64)".
    static func signature(_ type: FunctionType) -> String { type.description }

    /// The function type of the import `module.name`, when the module imports that function.
    func importedFunctionType(module name: String, _ field: String) -> FunctionType? {
        for item in module.imports where item.module == name && item.name == field {
            if case .function(let index) = item.descriptor { return module.functionType(at: index) }
        }
        return nil
    }
}
