/// Why a plugin package (`.hhp`) was not packed, opened or extracted. `entry` names the file inside
/// the package the refusal is about (nil for the package or folder as a whole).
public struct PluginPackageError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The package file, or the plugin folder being packed, or the extraction destination.
    public var path: String
    public var entry: String?
    public var reason: String

    public init(path: String, entry: String? = nil, reason: String) {
        self.path = path
        self.entry = entry
        self.reason = reason
    }

    public var description: String {
        entry.map { "\(path): entry '\($0)': \(reason)" } ?? "\(path): \(reason)"
    }
}
