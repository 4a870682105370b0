import Foundation

/// Reads a plugin library file (a `.so` or a `.wasm`) as the host trusts nothing about it: only a
/// regular file (a FIFO, a device such as `/dev/zero` or a folder is refused before a byte is
/// read), at most `maxBytes`, read through one descriptor so that the bytes checked, hashed and
/// loaded are the same bytes whatever happens to the path meanwhile.
public enum LibraryFile {
    /// The largest library file hubhost reads (a plugin with the Swift runtime linked statically is
    /// well under 100 MiB).
    public static let maxBytes = 512 << 20

    /// The whole content of the regular file at `path`. Throws `.unreadableLibrary` naming the
    /// path and why: not a regular file, larger than `maxBytes`, cannot be opened, or it changed
    /// size while it was read.
    public static func read(path: String, maxBytes: Int = LibraryFile.maxBytes) throws -> [UInt8] {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused by fstat below.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw PluginLoadError.unreadableLibrary(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            throw PluginLoadError.unreadableLibrary(path: path, reason: String(cString: strerror(errno)))
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw PluginLoadError.unreadableLibrary(path: path, reason: "not a regular file")
        }
        guard status.st_size >= 0, status.st_size <= Int64(maxBytes) else {
            throw PluginLoadError.unreadableLibrary(
                path: path, reason: "it is \(status.st_size) bytes, more than the \(maxBytes >> 20) MiB a plugin library may be")
        }
        let size = Int(status.st_size)
        // One byte more than fstat said: a file that grows while it is read is seen to.
        var bytes = [UInt8](repeating: 0, count: size + 1)
        var filled = 0
        while filled < bytes.count {  // bounded: each pass reads at least one byte or ends
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + filled, $0.count - filled, off_t(filled)) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw PluginLoadError.unreadableLibrary(path: path, reason: String(cString: strerror(errno))) }
            if count == 0 { break }
            filled += count
        }
        guard filled == size else {
            throw PluginLoadError.unreadableLibrary(path: path, reason: "it changed size while it was read (\(size) bytes, then \(filled)); try again")
        }
        bytes.removeLast()
        return bytes
    }

    /// SHA-256 (hex) of the library file at `path`, read as `read` reads it; nil when it cannot be.
    public static func sha256(path: String) -> String? {
        (try? read(path: path)).map { SHA256.hex(of: Data($0)) }
    }
}
