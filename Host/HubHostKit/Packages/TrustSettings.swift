import Foundation
import Yams

/// `trust:` in plugins.yaml: the minisign public keys whose signatures hubhost accepts on plugin
/// packages, each for the plugin ids matching its glob pattern.
///
///     trust:
///       - name: acme
///         key: RWQUucivEHVsFYRnMO2MrqAd+d7W/3DZNach418AIP69L0vhXdlxXvEE
///         ids: "acme-*"
package struct TrustSettings: ManifestSection, Equatable {
    /// One trusted key.
    package struct Entry: Equatable, Sendable {
        /// A unique name for the key (its publisher).
        package var name: String
        package var key: MinisignPublicKey
        /// A glob over plugin ids (`*`, `?`, `[...]`); "*" trusts the key for every plugin.
        package var ids: String
        /// The plugins.yaml line the entry starts on (nil: not from a file).
        package var line: Int?

        package init(name: String, key: MinisignPublicKey, ids: String = "*", line: Int? = nil) {
            self.name = name
            self.key = key
            self.ids = ids
            self.line = line
        }

        /// Whether the entry's pattern covers `pluginID`.
        package func covers(pluginID: String) -> Bool {
            fnmatch(ids, pluginID, 0) == 0
        }
    }

    package var entries: [Entry] = []

    package static let sectionName = "trust"
    package static let summary =
        "The minisign public keys trusted to sign plugin packages (`hubhost plugins trust` adds one), each limited to the plugin ids its pattern matches."
    package static let schema = ConfigSchema(keys: [])
    package static var structuredKeys: [ConfigReferenceEntry] {
        [
            ConfigReferenceEntry(key: "trust", type: "list of maps", defaultValue: "[]", doc: "The trusted keys; empty: none.", live: true),
            ConfigReferenceEntry(
                key: "trust[].name", type: "string, required", accepted: "unique",
                doc: "A name for the key, such as its publisher's; two entries may not share one."),
            ConfigReferenceEntry(
                key: "trust[].key", type: "string, required", accepted: "a minisign public key",
                doc: "The base64 line of the key's .pub file (the second line; `minisign -P` takes the same)."),
            ConfigReferenceEntry(
                key: "trust[].ids", type: "string", defaultValue: "*", accepted: "a glob: letters, digits, -, _, ., *, ?, [ ]",
                doc: "The plugin ids the key may sign, as a glob pattern, e.g. acme-*.")
        ]
    }

    package init() {}

    package init(entries: [Entry]) { self.entries = entries }

    /// Whether `pattern` may be a `trust[].ids` glob: the characters of plugin ids and glob's own.
    package static func isValidPattern(_ pattern: String) -> Bool {
        !pattern.isEmpty && pattern.utf8.count <= 256
            && pattern.utf8.allSatisfy { byte in
                (0x61...0x7a).contains(byte) || (0x41...0x5a).contains(byte) || (0x30...0x39).contains(byte) || "-_.*?[]!".utf8.contains(byte)
            }
    }

    /// The entries whose pattern covers `pluginID`.
    package func keys(for pluginID: String) -> [Entry] { entries.filter { $0.covers(pluginID: pluginID) } }

    package init(section node: Node, context: ManifestSectionContext) {
        let reader = context.reader
        guard let items = reader.sequence(node, key: "trust") else { return }
        var seen: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            let path = "trust[\(index)]"
            guard let itemEntries = reader.mapping(item, key: path) else { continue }
            let fields = reader.known(itemEntries, allowed: ["name", "key", "ids"], in: path)
            for required in ["name", "key"] where fields[required] == nil {
                reader.report(item, key: "\(path).\(required)", "missing required key '\(required)'")
            }
            guard let nameNode = fields["name"]?.value, let name = reader.string(nameNode, key: "\(path).name"),
                let keyNode = fields["key"]?.value, let keyText = reader.string(keyNode, key: "\(path).key")
            else { continue }
            if name.isEmpty {
                reader.report(nameNode, key: "\(path).name", "the name may not be empty")
                continue
            }
            if let first = seen[name] {
                reader.report(
                    nameNode, key: "\(path).name", "duplicate trust name '\(name)' (first used on line \(first)); each key needs its own name")
                continue
            }
            seen[name] = nameNode.mark?.line ?? 0
            let key: MinisignPublicKey
            do {
                key = try MinisignPublicKey(base64: keyText)
            } catch {
                reader.report(keyNode, key: "\(path).key", "not a minisign public key: \(error)")
                continue
            }
            var ids = "*"
            if let idsNode = fields["ids"]?.value, let pattern = reader.string(idsNode, key: "\(path).ids") {
                guard Self.isValidPattern(pattern) else {
                    reader.report(
                        idsNode, key: "\(path).ids", "'\(pattern)' is not a plugin id pattern: use letters, digits, '-', '_', '.' and * ? [ ]")
                    continue
                }
                ids = pattern
            }
            entries.append(Entry(name: name, key: key, ids: ids, line: item.mark?.line))
        }
    }

    package var effectiveValues: [EffectiveSetting] {
        [
            EffectiveSetting(
                key: "trust",
                value: .array(
                    entries.map { entry in
                        .object([
                            "name": .string(entry.name), "key": .string(entry.key.base64), "key_id": .string(entry.key.keyIDText),
                            "ids": .string(entry.ids)
                        ])
                    }), line: entries.first?.line, doc: "The minisign keys trusted to sign plugin packages.")
        ]
    }
}

extension HostManifest {
    /// The keys trusted to sign plugin packages (`trust:`).
    package var trust: TrustSettings {
        get { section(TrustSettings.self) }
        set { setSection(newValue) }
    }
}
