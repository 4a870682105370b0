/// One problem found in a manifest: where it is (file:line:column), which key, and what was expected.
///
/// Diagnostics are collected, never thrown one at a time, so a user sees every problem in one run.
public struct ManifestDiagnostic: Error, Codable, Hashable, Sendable, CustomStringConvertible {
    /// Path of the file the problem is in: plugins.yaml, an instance file it includes, or a plugin.yaml.
    public var file: String
    /// Line of the problem, from 1.
    public var line: Int
    /// Column of the problem, from 1.
    public var column: Int
    /// The dotted path of the key, e.g. `plugins[2].config.latitude`; empty for the whole file.
    public var key: String
    /// What is wrong and what was expected, e.g. "missing required key 'id'".
    public var message: String

    /// A diagnostic at `file`:`line`:`column` (both from 1), for `key` (empty: the whole file).
    public init(file: String, line: Int, column: Int, key: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.key = key
        self.message = message
    }

    /// `file:line:column: key: message`, the form compilers use, so editors can jump to it.
    public var description: String {
        "\(file):\(line):\(column): " + (key.isEmpty ? "" : "\(key): ") + message
    }
}

/// A manifest that could not be used at all (unreadable file, invalid YAML), with every problem found.
public struct ManifestError: Error, CustomStringConvertible {
    /// Every problem found, in the order found.
    public var diagnostics: [ManifestDiagnostic]

    /// An error listing `diagnostics`.
    public init(_ diagnostics: [ManifestDiagnostic]) { self.diagnostics = diagnostics }

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}
