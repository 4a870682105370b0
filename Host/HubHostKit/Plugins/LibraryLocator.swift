import Foundation

/// Finds a plugin library file: next to its plugin.yaml (or in its `lib/<triple>/` for this
/// machine, where a plugin package keeps it), then in each folder of `HUBHOST_PLUGIN_PATH`
/// (colon-separated), then in the folder of the running executable (where `swift build` puts the
/// bundled plugins' `.so` files).
public struct LibraryLocator: Sendable {
    /// The folders of `HUBHOST_PLUGIN_PATH`, in order, searched after the plugin.yaml's folder.
    public var searchPath: [String]
    /// The folder searched last, the running executable's by default; nil: none.
    public var executableFolder: String?

    /// A locator whose search path is `environment`'s `HUBHOST_PLUGIN_PATH` (colon-separated, empty entries
    /// skipped), the process's by default.
    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment, executableFolder: String? = LibraryLocator.runningExecutableFolder()
    ) {
        self.searchPath = (environment["HUBHOST_PLUGIN_PATH"] ?? "").split(separator: ":").map(String.init).filter { !$0.isEmpty }
        self.executableFolder = executableFolder
    }

    /// The folders searched for a library whose plugin.yaml is in `manifestFolder`, in order.
    public func folders(manifestFolder: String?) -> [String] {
        var folders: [String] = []
        if let manifestFolder { folders.append(manifestFolder) }
        folders += searchPath
        if let executableFolder { folders.append(executableFolder) }
        return folders
    }

    /// The library's absolute path, or the folders that were searched.
    public func locate(library: String, manifestFolder: String?) -> Result<String, PluginLoadError> {
        if library.hasPrefix("/") {
            return FileManager.default.fileExists(atPath: library)
                ? .success(library)
                : .failure(.libraryNotFound(library: library, searched: [(library as NSString).deletingLastPathComponent]))
        }
        let folders = folders(manifestFolder: manifestFolder)
        for folder in folders {
            let candidate = (folder as NSString).appendingPathComponent(library)
            if FileManager.default.fileExists(atPath: candidate) { return .success((candidate as NSString).standardizingPath) }
            // An extracted plugin package keeps each platform's library in lib/<triple>/.
            if folder == manifestFolder, let platform = PackagePlatform.host {
                let packaged = ((folder as NSString).appendingPathComponent(platform.folder) as NSString).appendingPathComponent(library)
                if FileManager.default.fileExists(atPath: packaged) { return .success((packaged as NSString).standardizingPath) }
            }
        }
        return .failure(.libraryNotFound(library: library, searched: folders))
    }

    /// The hubhost package whose `swift build` builds the plugin whose plugin.yaml is in
    /// `manifestFolder` (a bundled plugin: `<package>/Plugins/<Name>/plugin.yaml` beside the
    /// package's Package.swift), or nil for a plugin that is not bundled.
    public static func packageBundling(manifestFolder: String) -> String? {
        let folder = (manifestFolder as NSString).standardizingPath as NSString
        let plugins = folder.deletingLastPathComponent as NSString
        guard plugins.lastPathComponent == "Plugins" else { return nil }
        let package = plugins.deletingLastPathComponent
        return FileManager.default.fileExists(atPath: (package as NSString).appendingPathComponent("Package.swift"))
            && FileManager.default.fileExists(atPath: folder.appendingPathComponent("plugin.yaml")) ? package : nil
    }

    /// The absolute path of the running executable.
    public static func runningExecutablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// The folder of the running executable (from /proc/self/exe, else the main bundle); nil when neither says.
    public static func runningExecutableFolder() -> String? {
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else {
            return Bundle.main.executablePath.map { ($0 as NSString).deletingLastPathComponent }
        }
        return (path as NSString).deletingLastPathComponent
    }
}
