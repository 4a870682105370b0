import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Files written so that a crash or power loss leaves the old content or the new, never a mix:
/// the bundle store's records, plugins.lock, plugins.d instance files.
enum DurableFile {
    /// Writes `data` to `path` and fsyncs it; `atomically` writes a sibling temp file first and
    /// renames it over `path`, so readers see the old or the new content, never a mix.
    static func write(_ data: Data, to path: String, atomically: Bool = false) throws {
        let target = atomically ? path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))" : path
        let fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var failure: Int32 = 0
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure == 0 && fsync(fd) != 0 { failure = errno }
        close(fd)
        if failure != 0 {
            unlink(target)
            throw POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO)
        }
        if atomically {
            guard rename(target, path) == 0 else {
                let code = errno
                unlink(target)
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
            syncDirectory((path as NSString).deletingLastPathComponent)
        }
    }

    /// fsync on the directory, so a rename survives a power loss.
    static func syncDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
