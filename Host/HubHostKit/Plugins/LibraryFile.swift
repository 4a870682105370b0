import Foundation

/// Reads a plugin library file (a `.so` or a `.wasm`) as the host trusts nothing about it: a regular
/// file of at most `maxBytes`, read through one descriptor (`BoundedFile`), so that the bytes
/// checked, hashed and loaded are the same bytes whatever happens to the path meanwhile.
package enum LibraryFile {
    /// The largest library file hubhost reads (a plugin with the Swift runtime linked statically is
    /// well under 100 MiB).
    package static let maxBytes = 512 << 20

    /// The whole content of the regular file at `path` (`BoundedFile`). Throws `.unreadableLibrary`
    /// naming the path and why: not a regular file, larger than `maxBytes`, cannot be opened, or it
    /// changed size while it was read.
    package static func read(path: String, maxBytes: Int = LibraryFile.maxBytes) throws -> [UInt8] {
        do {
            return try BoundedFile.read(path: path, maxBytes: maxBytes)
        } catch {
            throw PluginLoadError.unreadableLibrary(path: path, reason: error.reason)
        }
    }

    /// SHA-256 (hex) of the library file at `path`, read as `read` reads it; nil when it cannot be.
    package static func sha256(path: String) -> String? {
        (try? read(path: path)).map { SHA256.hex(of: Data($0)) }
    }
}
