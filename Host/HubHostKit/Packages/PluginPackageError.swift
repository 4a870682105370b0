/// Why a plugin package (`.hhp`) was not packed, opened or extracted. `entry` names the file inside
/// the package the refusal is about (nil for the package or folder as a whole).
package struct PluginPackageError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The package file, or the plugin folder being packed, or the extraction destination.
    package var path: String
    package var entry: String?
    package var reason: String

    package init(path: String, entry: String? = nil, reason: String) {
        self.path = path
        self.entry = entry
        self.reason = reason
    }

    package var description: String {
        entry.map { "\(path): entry '\($0)': \(reason)" } ?? "\(path): \(reason)"
    }
}
