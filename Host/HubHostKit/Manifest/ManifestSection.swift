import Foundation
import Yams

/// A section of plugins.yaml that its engine parses and validates itself (`events:`, `campaigns:`,
/// `hub:`, `deep_links:`, `server:`). The Manifest layer only hands sections out: it reads the
/// file, keeps positions for diagnostics, and knows no engine's settings type; each engine's
/// settings type conforms to this protocol in the engine's own folder, and the runtime lists them
/// (`HostManifest.sectionTypes`).
package protocol ManifestSection: Sendable {
    /// The section's key in plugins.yaml.
    static var sectionName: String { get }
    /// One sentence on what the section configures (the configuration reference's lead).
    static var summary: String { get }
    /// The section's scalar keys: type, default, accepted values and meaning, written once. The
    /// parser checks values against it, `config show` documents them, `config reference` lists them.
    static var schema: ConfigSchema { get }
    /// Keys the schema cannot describe (lists, nested maps), for the configuration reference.
    static var structuredKeys: [ConfigReferenceEntry] { get }
    /// The settings when the section is absent: every default.
    init()
    /// Parses the section (`node`, the value under the key), reporting each problem through
    /// `context` with its position; never throws: a problem keeps that setting's default.
    init(section node: Node, context: ManifestSectionContext)
    /// The effective values, key by key (durations in seconds, paths absolute), with the line each
    /// was given on (nil: the default): what `manifest check --resolved` and `config show` print.
    var effectiveValues: [EffectiveSetting] { get }
    /// A change that needs the whole manifest (e.g. handing a URL to a plugin instance), run once
    /// after every section and instance is parsed.
    static func finish(_ manifest: inout HostManifest)
}

extension ManifestSection {
    package static func finish(_ manifest: inout HostManifest) {}
    package static var structuredKeys: [ConfigReferenceEntry] { [] }
}

/// One effective setting of a section.
package struct EffectiveSetting: Encodable, Sendable, Equatable {
    package var key: String
    package var value: JSONValue
    /// The plugins.yaml line it was given on; nil when it is the default.
    package var line: Int?
    package var doc: String

    package init(key: String, value: JSONValue, line: Int?, doc: String = "") {
        self.key = key
        self.value = value
        self.line = line
        self.doc = doc
    }
}

/// What a section's parser may use: the reader (diagnostics with positions), the key node to
/// report a missing or wrong section at, and the folder relative paths are resolved from.
package struct ManifestSectionContext {
    let reader: YAMLReader
    /// The section's key node in plugins.yaml.
    let anchor: Node
    /// The folder of plugins.yaml.
    package let folder: String

    /// The section's scalar keys checked against `schema` (types, unknown keys with "did you
    /// mean"), defaults filled in; `lines` tells where each given key was.
    func resolve(_ node: Node, schema: ConfigSchema, lines: inout [String: Int]) -> [String: PluginValue] {
        schema.resolve(node, path: sectionName, reader: reader, reportAt: anchor, lines: &lines)
    }

    let sectionName: String

    /// Reports a problem at `node` (or at the section's key) for `key` (`section.key`).
    func report(_ node: Node?, key: String, _ message: String) {
        reader.report(node ?? anchor, key: key, message)
    }

    /// An absolute path for a path written in plugins.yaml.
    package func absolute(_ path: String) -> String { HostManifest.absolute(path, from: folder) }
}

extension ConfigSchema {
    /// The effective values of a schema-checked section, in schema order.
    func effective(_ values: [String: PluginValue], lines: [String: Int], section: String) -> [EffectiveSetting] {
        keys.map { key in
            EffectiveSetting(
                key: "\(section).\(key.key)", value: values[key.key]?.json ?? key.defaultValue?.json ?? .null,
                line: lines[key.key], doc: key.doc)
        }
    }
}
