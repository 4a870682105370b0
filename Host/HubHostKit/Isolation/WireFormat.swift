import Foundation

/// The compact binary encoding of the process-isolation protocol: little-endian integers,
/// length-prefixed UTF-8 strings, typed values. Frames on the socket are `[u32 length][payload]`.
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(128) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func raw(_ more: [UInt8]) { bytes.append(contentsOf: more) }
    mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func i32(_ v: Int32) { u32(UInt32(bitPattern: v)) }
    mutating func i64(_ v: Int64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func f64(_ v: Double) { u64(v.bitPattern) }

    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            u32(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func data(_ d: Data) {
        u32(UInt32(d.count))
        bytes.append(contentsOf: d)
    }

    mutating func value(_ v: PluginValue) {
        switch v {
        case .null: u8(0)
        case .string(let s): u8(1); string(s)
        case .int(let i): u8(2); i64(i)
        case .double(let d): u8(3); f64(d)
        case .bool(let b): u8(4); bool(b)
        case .timeMs(let t): u8(5); i64(t)
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

    mutating func string() throws -> String {
        let count = Int(try u32())
        return String(decoding: try take(count), as: UTF8.self)
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
    /// Writes one frame; false when the peer is gone.
    static func write(_ fd: Int32, _ payload: [UInt8]) -> Bool {
        var frame = [UInt8]()
        frame.reserveCapacity(payload.count + 4)
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { frame.append(contentsOf: $0) }
        frame.append(contentsOf: payload)
        return frame.withUnsafeBytes { buffer in
            var sent = 0
            while sent < buffer.count {
                let n = send(fd, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return false }
                sent += n
            }
            return true
        }
    }

    enum ReadResult {
        case frame([UInt8])
        case closed
        case timedOut
        case failed(String)
    }

    /// Reads one frame, waiting until `deadlineNs` (monotonic) at the most; nil deadline waits forever.
    static func read(_ fd: Int32, deadlineNs: UInt64?, maxBytes: Int = 256 << 20) -> ReadResult {
        var header = [UInt8](repeating: 0, count: 4)
        switch readExactly(fd, &header, deadlineNs: deadlineNs) {
        case .ok: break
        case .closed: return .closed
        case .timedOut: return .timedOut
        case .failed(let why): return .failed(why)
        }
        let length = Int(header.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard length <= maxBytes else { return .failed("frame of \(length) bytes is over the \(maxBytes) byte limit") }
        var payload = [UInt8](repeating: 0, count: length)
        switch readExactly(fd, &payload, deadlineNs: deadlineNs) {
        case .ok: return .frame(payload)
        case .closed: return .closed
        case .timedOut: return .timedOut
        case .failed(let why): return .failed(why)
        }
    }

    private enum Exact { case ok, closed, timedOut, failed(String) }

    private static func readExactly(_ fd: Int32, _ buffer: inout [UInt8], deadlineNs: UInt64?) -> Exact {
        var got = 0
        while got < buffer.count {
            if let deadlineNs {
                let now = Clock.monotonicNs()
                if now >= deadlineNs { return .timedOut }
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let waitMs = Int32(min(UInt64(Int32.max), (deadlineNs - now + 999_999) / 1_000_000))
                let ready = poll(&pfd, 1, waitMs)
                if ready < 0 && errno == EINTR { continue }
                if ready < 0 { return .failed("poll: \(String(cString: strerror(errno)))") }
                if ready == 0 { continue }
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + got, $0.count - got, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return .failed("recv: \(String(cString: strerror(errno)))") }
            if n == 0 { return .closed }
            got += n
        }
        return .ok
    }
}
