import Foundation
import HubHostKit

/// What a plugin built outside a hubhost checkout needs from the running hubhost: the folder of the
/// ABI headers (`<prefix>/include` of an installed hubhost, else `Protocols/include` of the
/// package checkout it was built from), the Clang module map a Swift plugin imports them through,
/// and the WebAssembly build script, when there is one.
public struct PluginSDK: Codable, Sendable, Equatable {
    /// The compiler flags: `-I<include>`.
    public var cflags: String
    /// The folder holding `hubhost/hubhost.h`.
    public var include: String
    /// scripts/build-wasm-plugin of the checkout or the installation, when present.
    public var wasmBuilder: String?
    /// `hubhost/hubhost.modulemap` in `include`, when present: the headers as the Clang module
    /// HubHostABI, so a Swift plugin builds with swiftc alone.
    public var moduleMap: String?
    /// The swiftc flags that make `import HubHostABI` work: `-I<include> -Xcc -fmodule-map-file=<moduleMap>`.
    public var swiftFlags: String?

    enum CodingKeys: String, CodingKey {
        case cflags, include
        case wasmBuilder = "wasm_builder"
        case moduleMap = "module_map"
        case swiftFlags = "swift_flags"
    }

    /// The SDK of the running hubhost, or nil when neither an installation nor a checkout has the headers.
    public static func locate(executableFolder: String? = LibraryLocator.runningExecutableFolder()) -> PluginSDK? {
        guard let executableFolder else { return nil }
        let fm = FileManager.default
        let prefix = ((executableFolder as NSString).standardizingPath as NSString).deletingLastPathComponent
        let roots = HubHostInstallation.resourceFolders(executableFolder: executableFolder).map { ($0 as NSString).standardizingPath }
        let candidates = [(prefix as NSString).appendingPathComponent("include")] + roots.map { "\($0)/Protocols/include" }
        guard let include = candidates.first(where: { fm.fileExists(atPath: "\($0)/hubhost/hubhost.h") }) else { return nil }
        let builder = roots.map { "\($0)/scripts/build-wasm-plugin" }.first { fm.isExecutableFile(atPath: $0) }
        let moduleMap = "\(include)/hubhost/hubhost.modulemap"
        let hasModuleMap = fm.fileExists(atPath: moduleMap)
        return PluginSDK(
            cflags: "-I" + shellQuoted(include), include: include, wasmBuilder: builder, moduleMap: hasModuleMap ? moduleMap : nil,
            swiftFlags: hasModuleMap ? "-I\(shellQuoted(include)) -Xcc -fmodule-map-file=\(shellQuoted(moduleMap))" : nil)
    }

    /// `path` as one shell word: unchanged when it has only safe characters, else in single quotes.
    static func shellQuoted(_ path: String) -> String {
        let safe = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "/._-+,:@%="))
        if path.unicodeScalars.allSatisfy({ safe.contains($0) }) { return path }
        return "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
