import Foundation

/// The instance files `hubhost plugins add` writes, one per instance, into `plugins.d/` beside
/// plugins.yaml (which includes them with `include: plugins.d/*.yaml`), and the one line it adds to
/// plugins.yaml when that include is missing. Nothing a person wrote is rewritten.
package enum InstanceFile {
    /// The folder of instance files: `plugins.d/` beside plugins.yaml.
    package static func folder(manifestFile: String) -> String {
        ((manifestFile as NSString).deletingLastPathComponent as NSString).appendingPathComponent("plugins.d")
    }

    /// `plugins.d/<instance>.yaml`.
    package static func path(manifestFile: String, instance: String) -> String {
        (folder(manifestFile: manifestFile) as NSString).appendingPathComponent(instance + ".yaml")
    }

    /// The pattern added to plugins.yaml.
    package static let includePattern = "plugins.d/*.yaml"

    /// The text of the file of one instance of the installed plugin `pluginID`, with `settings`
    /// as its config (each value written as YAML reads it: numbers and booleans as such, anything
    /// else quoted).
    package static func text(
        instance: String, pluginID: String, version: String, package: String, settings: [(key: String, value: String)], allowUnsigned: Bool
    ) -> String {
        var lines = [
            "# Written by hubhost plugins add (\(pluginID) \(version), from \(TrustListEditor.quoted(package).dropFirst().dropLast())).",
            "# Edit the config freely; hubhost plugins remove \(instance) deletes this file.",
            "plugins:",
            "  - id: \(TrustListEditor.quoted(instance))",
            "    use: \(TrustListEditor.quoted(pluginID))"
        ]
        if allowUnsigned { lines.append("    allow_unsigned: true") }
        if !settings.isEmpty {
            lines.append("    config:")
            for setting in settings { lines.append("      \(TrustListEditor.quoted(setting.key)): \(scalar(setting.value))") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A `--set` value as a YAML scalar: an integer, a decimal or true/false as written; anything
    /// else double-quoted, so that no value can add keys or structure.
    static func scalar(_ value: String) -> String {
        if value == "true" || value == "false" { return value }
        if !value.isEmpty, value.utf8.count <= 32, Double(value) != nil,
            value.utf8.allSatisfy({ (0x30...0x39).contains($0) || "-+.eE".utf8.contains($0) })
        {
            return value
        }
        return TrustListEditor.quoted(value)
    }

    /// Whether plugins.yaml's `text` has a top-level `include:` key.
    package static func hasIncludeKey(_ text: String) -> Bool {
        text.split(separator: "\n", omittingEmptySubsequences: false).contains { line in
            line.hasPrefix("include:") || line.hasPrefix("\"include\":") || line.hasPrefix("'include':")
        }
    }

    /// plugins.yaml's `text` with `include: plugins.d/*.yaml` appended (when it has no include: key).
    package static func addingInclude(to text: String) -> String {
        var result = text
        if !result.isEmpty && !result.hasSuffix("\n") { result += "\n" }
        if !result.isEmpty && !result.hasSuffix("\n\n") { result += "\n" }
        return result + "# The instances hubhost plugins add installs, one file each.\ninclude: \(includePattern)\n"
    }
}
