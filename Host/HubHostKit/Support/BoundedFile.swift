import Foundation

/// Reads a whole file the host was pointed at, trusting nothing about it: only a regular file (a
/// FIFO, a device such as `/dev/zero` or a folder is refused before a byte is read, where a plain
/// read would wait or never end), at most `maxBytes`, through one descriptor, so the bytes checked
/// are the bytes used whatever happens to the path meanwhile.
enum BoundedFile {
    /// Why a file was not read, said so it can follow "<path>: " or "cannot be read: ".
    struct Refusal: Error, Equatable {
        var reason: String
    }

    /// The whole content of the regular file at `path`, or why not: not a regular file, more than
    /// `maxBytes`, cannot be opened, or it changed size while it was read.
    static func read(path: String, maxBytes: Int) throws(Refusal) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused by fstat below.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw Refusal(reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw Refusal(reason: String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw Refusal(reason: "not a regular file") }
        guard status.st_size >= 0, status.st_size <= Int64(maxBytes) else {
            throw Refusal(reason: "it is \(status.st_size) bytes, more than the \(ByteCount.text(maxBytes)) it may be")
        }
        let size = Int(status.st_size)
        // One byte more than fstat said: a file that grows while it is read is seen to.
        var bytes = [UInt8](repeating: 0, count: size + 1)
        var filled = 0
        while filled < bytes.count {  // bounded: each pass reads at least one byte or ends
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + filled, $0.count - filled, off_t(filled)) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Refusal(reason: String(cString: strerror(errno))) }
            if count == 0 { break }
            filled += count
        }
        guard filled == size else {
            throw Refusal(reason: "it changed size while it was read (\(size) bytes, then \(filled)); try again")
        }
        bytes.removeLast()
        return bytes
    }
}
