/// The effective configuration of a host manifest, for `hubhost manifest check --resolved`: paths
/// absolute, defaults filled in, durations as seconds, each library located.
public struct ResolvedManifest: Encodable, Sendable {
    public struct Instance: Encodable, Sendable {
        public var id: String
        public var use: String
        public var plugin: String?
        public var version: String?
        public var kinds: [String]
        public var enabled: Bool
        public var sha256: String?
        /// The library file it would load, or why none was found.
        public var library: String?
        public var libraryProblem: String?
        public var config: [String: JSONValue]
    }

    public var file: String
    public var dataDir: String
    public var logging: LogFilter
    public var plugins: [Instance]

    enum CodingKeys: String, CodingKey { case file, dataDir = "data_dir", logging, plugins }

    public init(_ manifest: HostManifest, locator: LibraryLocator = LibraryLocator()) {
        file = manifest.file
        dataDir = manifest.dataDirectory
        logging = manifest.logging
        plugins = manifest.instances.map { instance in
            var library: String?, problem: String?
            if let plugin = instance.plugin {
                switch locator.locate(library: plugin.library, manifestFolder: plugin.folder) {
                case .success(let path): library = path
                case .failure(let error): problem = error.description
                }
            }
            return Instance(id: instance.id, use: instance.use, plugin: instance.plugin?.id, version: instance.plugin?.version,
                            kinds: instance.plugin?.kinds.map(\.rawValue) ?? [], enabled: instance.enabled, sha256: instance.sha256,
                            library: library, libraryProblem: problem, config: instance.config.mapValues(\.json))
        }
    }
}
