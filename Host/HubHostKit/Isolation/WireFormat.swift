import Foundation

/// The compact binary encoding of the process-isolation protocol: little-endian integers,
/// length-prefixed UTF-8 strings, typed values. Frames on the socket are `[u32 length][payload]`.
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(128) }

    /// Makes room for `more` bytes beyond what is written, so the appends that follow do not grow the buffer.
    mutating func reserve(_ more: Int) { bytes.reserveCapacity(bytes.count + more) }
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func raw(_ more: [UInt8]) { bytes.append(contentsOf: more) }
    mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    mutating func i64(_ v: Int64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func f64(_ v: Double) { u64(v.bitPattern) }

    mutating func string(_ s: String) {
        let utf8 = s.utf8
        u32(UInt32(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    mutating func data(_ d: Data) {
        u32(UInt32(d.count))
        bytes.append(contentsOf: d)
    }

    mutating func value(_ v: PluginValue) {
        switch v {
        case .null: u8(0)
        case .string(let s):
            u8(1)
            string(s)
        case .int(let i):
            u8(2)
            i64(i)
        case .double(let d):
            u8(3)
            f64(d)
        case .bool(let b):
            u8(4)
            bool(b)
        case .timeMs(let t):
            u8(5)
            i64(t)
        }
    }

    mutating func optionalString(_ s: String?) {
        bool(s != nil)
        if let s { string(s) }
    }

    mutating func optionalDouble(_ d: Double?) {
        bool(d != nil)
        if let d { f64(d) }
    }
}

struct WireError: Error, CustomStringConvertible {
    var description: String
}

struct WireReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    private mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, offset + count <= bytes.count else { throw WireError(description: "truncated frame") }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func u8() throws -> UInt8 { try take(1).first! }
    mutating func bool() throws -> Bool { try u8() != 0 }

    mutating func u32() throws -> UInt32 {
        let slice = try take(4)
        return slice.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func i32() throws -> Int32 { Int32(bitPattern: try u32()) }

    mutating func u64() throws -> UInt64 {
        let slice = try take(8)
        return slice.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func i64() throws -> Int64 { Int64(bitPattern: try u64()) }
    mutating func f64() throws -> Double { Double(bitPattern: try u64()) }

    /// A string's bytes decoded leniently (invalid UTF-8 becomes U+FFFD): for what only a trusted
    /// writer (the host, a worker's adapters) encodes, or what is only shown.
    mutating func string() throws -> String {
        String(decoding: try stringBytes(), as: UTF8.self)
    }

    /// A string's bytes as they were written, undecoded: for a reader that must refuse invalid
    /// UTF-8 rather than repair it (a guest's edits, judged by the editor's own rules).
    mutating func stringBytes() throws -> ArraySlice<UInt8> {
        try take(Int(try u32()))
    }

    mutating func data() throws -> Data {
        Data(try take(Int(try u32())))
    }

    mutating func value() throws -> PluginValue {
        switch try u8() {
        case 0: return .null
        case 1: return .string(try string())
        case 2: return .int(try i64())
        case 3: return .double(try f64())
        case 4: return .bool(try bool())
        case 5: return .timeMs(try i64())
        case let tag: throw WireError(description: "unknown value tag \(tag)")
        }
    }

    mutating func optionalString() throws -> String? { try bool() ? try string() : nil }
    mutating func optionalDouble() throws -> Double? { try bool() ? try f64() : nil }
}

/// Reading and writing whole frames on a blocking socket.
enum FrameIO {
    /// How long a write waits for room in the socket when the caller gives no deadline.
    static let defaultWriteSeconds: UInt64 = 30

    /// Writes one frame; false when the peer is gone or has not taken it by `deadlineNs`
    /// (monotonic; nil: `defaultWriteSeconds` from now). A peer that stops reading mid-frame
    /// (a worker stuck in a plugin while a large request is sent) cannot hold the writer forever.
    static func write(_ fd: Int32, _ payload: [UInt8], deadlineNs: UInt64? = nil) -> Bool {
        var frame = [UInt8]()
        frame.reserveCapacity(payload.count + 4)
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { frame.append(contentsOf: $0) }
        frame.append(contentsOf: payload)
        let deadline = deadlineNs ?? Clock.monotonicNs() &+ defaultWriteSeconds * 1_000_000_000
        return frame.withUnsafeBytes { buffer in
            var sent = 0
            while sent < buffer.count {  // bounded by the deadline: each pass sends, or waits for room until it
                let n = send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                if n > 0 {
                    sent += n
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                guard n < 0, errno == EAGAIN || errno == EWOULDBLOCK else { return false }
                let now = Clock.monotonicNs()
                guard now < deadline else { return false }
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let waitMs = Int32(min(UInt64(Int32.max), (deadline - now + 999_999) / 1_000_000))
                if poll(&pfd, 1, waitMs) < 0 && errno != EINTR { return false }
            }
            return true
        }
    }
}

enum FrameReadResult {
    case frame([UInt8])
    case closed
    case timedOut
    case failed(String)
}

/// Reads frames from a socket with one receive buffer, so a frame usually costs one recv. Before
/// it sleeps in poll, it polls the socket without blocking for a short while (`spinNs`): an answer
/// that comes within microseconds is taken without a sleep and a wake-up, which halves the round
/// trip of an isolated call on a machine with a core to spare.
final class FrameReader {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var scratch = [UInt8](repeating: 0, count: 64 << 10)
    let maxFrameBytes: Int

    /// A pidfd of the process at the other end, or -1: when that process exits, the socket counts
    /// as closed once what it sent is read, even if a process it forked still holds its end open.
    let peerExit: Int32
    private var peerExited = false

    init(fd: Int32, maxFrameBytes: Int = 256 << 20, peerExit: Int32 = -1) {
        self.fd = fd
        self.maxFrameBytes = maxFrameBytes
        self.peerExit = peerExit
        buffer.reserveCapacity(64 << 10)
    }

    /// The next frame, waiting until `deadlineNs` (monotonic) at the most; nil waits forever.
    func next(deadlineNs: UInt64?, spinNs: UInt64 = 0) -> FrameReadResult {
        let spinUntil = spinNs > 0 ? Clock.monotonicNs() + spinNs : 0
        while true {
            if let frame = takeFrame() {
                switch frame {
                case .success(let bytes): return .frame(bytes)
                case .failure(let why): return .failed(why.description)
                }
            }
            // Receive whatever is there without blocking.
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                buffer.append(contentsOf: scratch[0..<n])
                continue
            }
            // A peer that died with data of ours unread resets the connection: it is gone all the same.
            if n == 0 || errno == ECONNRESET { return .closed }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { return .failed("recv: \(String(cString: strerror(errno)))") }
            if peerExited { return .closed }
            if spinUntil > 0, Clock.monotonicNs() < spinUntil { continue }
            // Nothing yet: sleep until readable or the deadline.
            var waitMs: Int32 = -1
            if let deadlineNs {
                let now = Clock.monotonicNs()
                if now >= deadlineNs { return .timedOut }
                waitMs = Int32(min(UInt64(Int32.max), (deadlineNs - now + 999_999) / 1_000_000))
            }
            var pfds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: peerExit, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&pfds, peerExit >= 0 ? 2 : 1, waitMs)
            if ready < 0 && errno != EINTR { return .failed("poll: \(String(cString: strerror(errno)))") }
            // The peer exited: read what it sent before it did, then the socket counts as closed.
            if peerExit >= 0, pfds[1].revents != 0 { peerExited = true }
        }
    }

    private func takeFrame() -> Result<[UInt8], WireError>? {
        let available = buffer.count - start
        guard available >= 4 else { return nil }
        let length = Int(buffer[start..<start + 4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard length <= maxFrameBytes else {
            return .failure(WireError(description: "frame of \(length) bytes is over the \(maxFrameBytes) byte limit"))
        }
        guard available >= 4 + length else { return nil }
        let frame = Array(buffer[start + 4..<start + 4 + length])
        start += 4 + length
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return .success(frame)
    }
}
