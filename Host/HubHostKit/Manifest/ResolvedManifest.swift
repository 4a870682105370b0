/// The effective configuration of a host manifest, for `hubhost manifest check --resolved`: paths
/// absolute, defaults filled in, durations as seconds, each library located.
package struct ResolvedManifest: Encodable, Sendable {
    package struct Instance: Encodable, Sendable {
        package var id: String
        package var use: String
        package var plugin: String?
        package var version: String?
        package var kinds: [String]
        package var enabled: Bool
        package var sha256: String?
        /// The library file it would load, or why none was found.
        package var library: String?
        package var libraryProblem: String?
        package var config: [String: JSONValue]
    }

    package var file: String
    package var dataDir: String
    package var logging: LogFilter
    package var plugins: [Instance]
    /// Every engine section (events, campaigns, hub, deep_links, server) with its effective values:
    /// the same values `hubhost config show` reports. Durations are seconds.
    package var sections: [String: [String: JSONValue]]

    enum CodingKeys: String, CodingKey { case file, dataDir = "data_dir", logging, plugins, sections }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(file, forKey: .file)
        try container.encode(dataDir, forKey: .dataDir)
        try container.encode(logging, forKey: .logging)
        try container.encode(plugins, forKey: .plugins)
        // Each section at the top level, as in plugins.yaml: "events": {"augmentation_timeout": 15, ...}.
        var top = encoder.container(keyedBy: DynamicKey.self)
        for (name, values) in sections.sorted(by: { $0.key < $1.key }) {
            try top.encode(values, forKey: DynamicKey(name))
        }
    }

    struct DynamicKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    package init(_ manifest: HostManifest, locator: LibraryLocator = LibraryLocator()) {
        file = manifest.file
        dataDir = manifest.dataDirectory
        sections = manifest.effectiveSettings.mapValues { settings in
            Dictionary(uniqueKeysWithValues: settings.map { (String($0.key.split(separator: ".", maxSplits: 1).last ?? ""), $0.value) })
        }
        logging = manifest.logging
        plugins = manifest.instances.map { instance in
            var library: String?
            var problem: String?
            if let plugin = instance.plugin {
                switch locator.locate(library: plugin.library, manifestFolder: plugin.folder) {
                case .success(let path): library = path
                case .failure(let error): problem = error.description
                }
            }
            return Instance(
                id: instance.id, use: instance.use, plugin: instance.plugin?.id, version: instance.plugin?.version,
                kinds: instance.plugin?.kinds.map(\.rawValue) ?? [], enabled: instance.enabled, sha256: instance.sha256,
                library: library, libraryProblem: problem, config: instance.config.mapValues(\.json))
        }
    }
}
