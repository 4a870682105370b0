import Foundation
import HubHostKit

/// A plugin.yaml as `plugins inspect` and `plugins test` both start from it: read without loading
/// the binary, then its library looked up as the host looks it up.
struct LocatedManifest {
    var manifest: PluginManifest?
    var problems: [ManifestDiagnostic]
    var libraryPath: String?
    /// Why the library was not found.
    var libraryProblem: String?

    /// True when `path` names a plugin.yaml rather than a library.
    static func isManifest(_ path: String) -> Bool { path.hasSuffix(".yaml") || path.hasSuffix(".yml") }

    init(path: String, locator: LibraryLocator) {
        let loaded = PluginManifest.load(path: path)
        manifest = loaded.manifest
        problems = loaded.diagnostics
        if let manifest {
            switch locator.locate(library: manifest.library, manifestFolder: manifest.folder) {
            case .success(let found): libraryPath = found
            case .failure(let error): libraryProblem = error.description
            }
        }
    }
}
