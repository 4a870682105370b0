import Foundation
import HubHostKit

/// What `hubhost plugins test PATH` tests: a plugin.yaml (preferred: it gives the schema and the
/// config to test with) or a bare `.so`.
public struct ValidationTarget: Sendable {
    public var path: String
    public var manifest: PluginManifest?
    public var manifestProblems: [ManifestDiagnostic]
    public var libraryPath: String?
    public var libraryProblem: String?
    /// Load the library from its file, not its sealed copy: the leak check's private copy, whose
    /// symbols valgrind reads from the file it maps.
    public var mapsLibraryFile = false
    /// The config the "valid config" tests use: the manifest's `test_config:` checked against the
    /// schema, with defaults filled in.
    public var validConfig: [String: PluginValue]

    public init(path: String, locator: LibraryLocator = LibraryLocator()) {
        let absolute = HostManifest.absolute(path, from: FileManager.default.currentDirectoryPath)
        self.path = absolute
        manifest = nil
        manifestProblems = []
        libraryPath = nil
        libraryProblem = nil
        validConfig = [:]
        if LocatedManifest.isManifest(absolute) {
            let located = LocatedManifest(path: absolute, locator: locator)
            manifest = located.manifest
            manifestProblems = located.problems
            libraryPath = located.libraryPath
            libraryProblem = located.libraryProblem
            validConfig = manifest?.testConfig ?? [:]
        } else if FileManager.default.fileExists(atPath: absolute) {
            libraryPath = absolute
        } else {
            libraryProblem = "no such file: \(absolute)"
        }
    }
}
