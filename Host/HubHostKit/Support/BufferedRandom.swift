import COpenSSL
import Foundation
import Synchronization

/// Random 64-bit words from OpenSSL's generator (RAND_bytes: a DRBG seeded from the kernel, which
/// reseeds in a forked child), fetched 4 KiB at a time: event ids took two getrandom system calls
/// each (SystemRandomNumberGenerator asks the kernel per word). This process starts its children
/// with posix_spawn and exec, so no child inherits the unused words.
/// Sendable: the buffer and its index live in a Mutex.
final class BufferedRandom: Sendable {
    static let shared = BufferedRandom()

    private struct Buffer {
        var words = [UInt64](repeating: 0, count: 512)
        var index = 512  // all used: the first call fills the buffer
    }
    private let buffer = Mutex(Buffer())

    /// Two random words.
    func nextPair() -> (UInt64, UInt64) {
        buffer.withLock { buffer in
            if buffer.index + 2 > buffer.words.count { Self.refill(&buffer) }
            defer { buffer.index += 2 }
            return (buffer.words[buffer.index], buffer.words[buffer.index + 1])
        }
    }

    /// Fills the buffer from RAND_bytes; when it fails (no seed), from SystemRandomNumberGenerator,
    /// word by word.
    private static func refill(_ buffer: inout Buffer) {
        let filled = buffer.words.withUnsafeMutableBytes { bytes in
            RAND_bytes(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(bytes.count)) == 1
        }
        if !filled {
            var generator = SystemRandomNumberGenerator()
            for i in buffer.words.indices { buffer.words[i] = generator.next() }
        }
        buffer.index = 0
    }
}
