import Foundation

/// A native plugin library's content as the host checked it: read once from its file
/// (`LibraryFile`), found to be an ELF shared object that maps whole (`ELFCheck`), hashed, and
/// copied into a sealed memory file that nothing can change or cut short. The library is dlopened
/// from that memory file, in the host or in a worker (which receives the descriptor), so what runs
/// is what was checked and pinned: a file renamed over the path, truncated or rewritten after the
/// check is never what is loaded, not even when an isolated worker restarts.
///
/// A library loaded from an image is named `/proc/self/fd/N` to the dynamic linker: `$ORIGIN` in
/// its run path is not the folder of its file, so a plugin finds its own dependencies by absolute
/// path or on the system's library path (docs/plugin-authoring.md).
/// Safe to share: every field is a `let`; the descriptor is closed only by deinit.
package final class LibraryImage: Sendable {
    /// The file it was read from (for messages and the library's init).
    package let path: String
    /// SHA-256 (lowercase hex) of its content.
    package let sha256: String
    /// Its size in bytes.
    package let size: Int
    /// The sealed memory file (close-on-exec; a worker gets a copy through dup2).
    let fd: Int32

    /// Whether dlopen maps the file at `path` itself instead of the sealed copy (`inPlace()`).
    package let mapsFile: Bool

    /// The name dlopen opens it by, in this process.
    var loadPath: String { mapsFile ? path : "/proc/self/fd/\(fd)" }

    private init(path: String, sha256: String, size: Int, fd: Int32, mapsFile: Bool = false) {
        self.path = path
        self.sha256 = sha256
        self.size = size
        self.fd = fd
        self.mapsFile = mapsFile
    }

    /// This image, checked as it is, but loaded from the file at its path: only for tools whose
    /// analysis needs the library's own file mapped (valgrind reads a library's symbols from the
    /// file it maps, and cannot read a memory file's). Nothing guards the file after the check: use
    /// it on a private copy (`hubhost plugins test --leaks` makes one), never in the host.
    package func inPlace() -> LibraryImage {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        return LibraryImage(path: path, sha256: sha256, size: size, fd: copy, mapsFile: true)
    }

    deinit { close(fd) }

    /// Reads and checks the library at `path`: when `pin` (a sha256 in hex) is given, its content
    /// must have that hash. Throws `.unreadableLibrary` (not a regular file, too large, unreadable),
    /// `.sha256Mismatch`, or `.notASharedObject` (not an ELF shared library for this machine, or cut short).
    package static func read(path: String, pin: String? = nil) throws -> LibraryImage {
        let bytes = try LibraryFile.read(path: path)
        let sha256 = SHA256.hex(of: Data(bytes))
        if let pin, pin != sha256 { throw PluginLoadError.sha256Mismatch(path: path, expected: pin, actual: sha256) }
        if let problem = ELFCheck.problem(bytes) { throw PluginLoadError.notASharedObject(path: path, reason: problem) }
        guard let fd = MemoryFile.create(name: "hubhost-plugin:\((path as NSString).lastPathComponent)") else {
            throw PluginLoadError.unreadableLibrary(path: path, reason: "the system refused a memory file for it (memfd_create)")
        }
        var written = 0
        while written < bytes.count {  // bounded: each pass writes at least one byte or throws
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw PluginLoadError.unreadableLibrary(path: path, reason: "cannot copy it into memory: \(reason)")
            }
            written += count
        }
        guard MemoryFile.seal(fd, MemoryFile.sealWrite | MemoryFile.sealShrink | MemoryFile.sealGrow | MemoryFile.sealSeal) else {
            close(fd)
            throw PluginLoadError.unreadableLibrary(path: path, reason: "the system refused to seal its copy in memory")
        }
        return LibraryImage(path: path, sha256: sha256, size: bytes.count, fd: fd)
    }

    /// The image a worker was handed as descriptor `fd` by the host, which read it from `path` and
    /// found `sha256`. Refused unless the descriptor is sealed against every change and its content
    /// still has that hash and passes the ELF check, so a worker runs exactly what the host checked.
    static func adopt(fd: Int32, path: String, sha256: String) throws -> LibraryImage {
        let all = MemoryFile.sealWrite | MemoryFile.sealShrink | MemoryFile.sealGrow
        guard let seals = MemoryFile.seals(fd), seals & all == all else {
            throw PluginLoadError.unreadableLibrary(path: path, reason: "the library the host handed over is not sealed")
        }
        let bytes = try LibraryFile.read(path: "/proc/self/fd/\(fd)")
        if let problem = ELFCheck.problem(bytes) { throw PluginLoadError.notASharedObject(path: path, reason: problem) }
        let actual = SHA256.hex(of: Data(bytes))
        guard actual == sha256 else { throw PluginLoadError.sha256Mismatch(path: path, expected: sha256, actual: actual) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return LibraryImage(path: path, sha256: sha256, size: bytes.count, fd: fd)
    }
}
