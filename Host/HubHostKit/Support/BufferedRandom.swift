import COpenSSL
import Foundation

/// Random 64-bit words from OpenSSL's generator (RAND_bytes: a DRBG seeded from the kernel, which
/// reseeds in a forked child), fetched 4 KiB at a time: event ids took two getrandom system calls
/// each (SystemRandomNumberGenerator asks the kernel per word). This process starts its children
/// with posix_spawn and exec, so no child inherits the unused words.
/// Safe to share: `words` and `index` are read and written only under `lock`.
final class BufferedRandom: @unchecked Sendable {
    static let shared = BufferedRandom()

    private let lock = NSLock()
    private var words = [UInt64](repeating: 0, count: 512)
    private var index = 512  // all used: the first call fills the buffer

    /// Two random words.
    func nextPair() -> (UInt64, UInt64) {
        lock.lock()
        defer { lock.unlock() }
        if index + 2 > words.count { refill() }
        defer { index += 2 }
        return (words[index], words[index + 1])
    }

    /// Fills the buffer from RAND_bytes; when it fails (no seed), from SystemRandomNumberGenerator,
    /// word by word.
    private func refill() {
        let filled = words.withUnsafeMutableBytes { buffer in
            RAND_bytes(buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1
        }
        if !filled {
            var generator = SystemRandomNumberGenerator()
            for i in words.indices { words[i] = generator.next() }
        }
        index = 0
    }
}
