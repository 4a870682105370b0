import Foundation
import Synchronization

/// The shared-memory slot of one worker: one request and one answer at a time, in a sealed memfd
/// mapped by the host and its worker child (the worker's fd 4). A call whose request and answer fit
/// crosses it without a system call when the other side is spinning for it; the socketpair stays for
/// the handshake, log records, wake-ups of a side that went to sleep, frames too large for the slot,
/// and liveness (a dead worker closes its end).
///
/// Layout: the words each side writes sit on their own 128-byte line (two cache lines, so the
/// adjacent-line prefetcher does not bounce them either), then the request area, then the answer
/// area. Each area holds the payload of one frame exactly as it would travel on the socket (type
/// byte first), so both transports decode alike. A sequence number is stored last to publish a
/// request or answer (sequentially consistent: it also orders the wake-up handshake below).
///
/// Wake-ups: a side that stops spinning sets its `waiting` word and sleeps in poll on the socket;
/// the other side, after publishing, takes the word (`exchange(0)`) and, when it was set, writes one
/// wake frame. A sleeper that finds the work published after setting its word takes the word back;
/// when the other side took it first, a wake frame is on its way and is read at once, so wake frames
/// never pile up in a socket.
///
/// The worker is not trusted: it can write anything into the slot at any time. The host reads each
/// length once and range-checks it, copies the answer out before decoding it, and the memfd is
/// sealed against shrinking, so the worker cannot make the host's mapping fault (SIGBUS).
/// @unchecked: it wraps a shared-memory mapping (a raw pointer), read and written
/// through atomics and the call protocol above.
final class SharedCallSlot: @unchecked Sendable {
    /// Bytes of the request area and of the answer area each; larger frames go on the socket.
    static let defaultCapacity = 64 << 10
    /// A length that says the frame did not fit and follows on the socket.
    static let onSocket: UInt32 = .max
    private static let lineBytes = 128
    private static let headerBytes = 2 * lineBytes

    /// The words, by byte offset: the host writes the first line, the worker the second.
    enum Word: Int {
        case requestSeq = 0
        case requestLength = 4
        case hostWaiting = 8
        case answerSeq = 128
        case answerLength = 132
        case workerWaiting = 136
        /// Log frames the worker has written on the socket, so the host reads them only when there are some.
        case logFrames = 140
    }

    let capacity: Int
    let size: Int
    private let base: UnsafeMutableRawPointer

    private init(base: UnsafeMutableRawPointer, capacity: Int, size: Int) {
        self.base = base
        self.capacity = capacity
        self.size = size
    }

    static func size(capacity: Int) -> Int { headerBytes + 2 * capacity }

    /// A new slot for a worker about to start, and the memfd to hand it (the caller closes it once the
    /// worker has it). Nil when the system refuses: the worker then runs on the socket alone.
    static func create(capacity: Int = defaultCapacity) -> (SharedCallSlot, fd: Int32)? {
        let size = size(capacity: capacity)
        guard let fd = MemoryFile.create(name: "hubhost-worker") else { return nil }
        guard ftruncate(fd, off_t(size)) == 0, MemoryFile.seal(fd, MemoryFile.sealShrink | MemoryFile.sealGrow | MemoryFile.sealSeal),
            let slot = map(fd: fd, size: size, capacity: capacity)
        else {
            close(fd)
            return nil
        }
        return (slot, fd)
    }

    /// The worker's view of the slot the host created; nil when `fd` is not a region of that size.
    static func attach(fd: Int32, capacity: Int) -> SharedCallSlot? {
        guard capacity > 0, capacity <= 64 << 20 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, Int(info.st_size) == size(capacity: capacity) else { return nil }
        return map(fd: fd, size: size(capacity: capacity), capacity: capacity)
    }

    private static func map(fd: Int32, size: Int, capacity: Int) -> SharedCallSlot? {
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
        guard let address, address != MAP_FAILED else { return nil }
        return SharedCallSlot(base: address, capacity: capacity, size: size)
    }

    deinit { munmap(base, size) }

    func word(_ word: Word) -> UnsafeMutablePointer<Atomic<UInt32>> {
        (base + word.rawValue).assumingMemoryBound(to: Atomic<UInt32>.self)
    }

    func load(_ which: Word) -> UInt32 { word(which).pointee.load(ordering: .acquiring) }

    private var requestArea: UnsafeMutableRawPointer { base + Self.headerBytes }
    private var answerArea: UnsafeMutableRawPointer { base + Self.headerBytes + capacity }

    // MARK: Publishing

    /// Host: publishes a call frame's payload under `seq`; false when it does not fit, and the slot
    /// then says it follows on the socket.
    func postRequest(_ payload: [UInt8], seq: UInt32) -> Bool {
        post(payload, into: requestArea, length: .requestLength, seq: .requestSeq, value: seq)
    }

    /// Worker: publishes a result frame's payload under `seq`; false as for `postRequest`.
    func postAnswer(_ payload: [UInt8], seq: UInt32) -> Bool {
        post(payload, into: answerArea, length: .answerLength, seq: .answerSeq, value: seq)
    }

    private func post(_ payload: [UInt8], into area: UnsafeMutableRawPointer, length: Word, seq: Word, value: UInt32) -> Bool {
        let fits = payload.count <= capacity
        if fits { payload.withUnsafeBytes { area.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
        word(length).pointee.store(fits ? UInt32(payload.count) : Self.onSocket, ordering: .relaxed)
        // Sequentially consistent, not only release: it orders the publish before the load of the
        // other side's `waiting` word (see takeSleeper).
        word(seq).pointee.store(value, ordering: .sequentiallyConsistent)
        return fits
    }

    /// What a published length says, checked against the area (the other side may have written anything).
    enum Taken {
        case bytes([UInt8])
        case onSocket
        case bad(UInt32)
    }

    /// Host: the answer published (after its sequence number was seen), copied out of the slot.
    func takeAnswer() -> Taken { take(from: answerArea, length: .answerLength) }

    /// Worker: the request published, copied out of the slot.
    func takeRequest() -> Taken { take(from: requestArea, length: .requestLength) }

    private func take(from area: UnsafeMutableRawPointer, length: Word) -> Taken {
        let count = word(length).pointee.load(ordering: .relaxed)
        if count == Self.onSocket { return .onSocket }
        guard Int(count) <= capacity else { return .bad(count) }
        return .bytes([UInt8](UnsafeRawBufferPointer(start: area, count: Int(count))))
    }

    // MARK: Sleeping and waking

    /// The sleeper announces it is about to sleep in poll. The store is sequentially consistent, as is
    /// the load of the sequence number that follows it and the other side's exchange after it publishes,
    /// so either the sleeper sees the work or the other side sees the word and sends a wake frame.
    func announceSleep(_ waiting: Word) { word(waiting).pointee.store(1, ordering: .sequentiallyConsistent) }

    /// The sleeper found the work without sleeping: takes its word back. False when the other side
    /// took it first, so one wake frame is coming and must be read.
    func cancelSleep(_ waiting: Word) -> Bool { word(waiting).pointee.exchange(0, ordering: .sequentiallyConsistent) == 1 }

    /// The publisher, after publishing: true when the other side sleeps (or is about to) and needs a
    /// wake frame. It loads before it exchanges, so a call while the other side spins does not take
    /// that side's cache line away from it.
    func takeSleeper(_ waiting: Word) -> Bool {
        word(waiting).pointee.load(ordering: .sequentiallyConsistent) == 1
            && word(waiting).pointee.exchange(0, ordering: .sequentiallyConsistent) == 1
    }

    func loadSeq(_ seq: Word) -> UInt32 { word(seq).pointee.load(ordering: .sequentiallyConsistent) }

    /// Spins until `done` or `spinNs` has passed; reads the clock only every 64 turns.
    static func spin(for spinNs: UInt64, until done: () -> Bool) -> Bool {
        if done() { return true }
        let until = Clock.monotonicNs() + spinNs
        var turns = 0
        while true {
            if done() { return true }
            turns &+= 1
            if turns & 63 == 0, Clock.monotonicNs() >= until { return false }
        }
    }
}
