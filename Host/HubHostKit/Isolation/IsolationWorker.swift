import Foundation
import Synchronization

/// The worker side of `isolation: process`: `hubhost worker --fd 3` runs this. It loads one
/// plugin library exactly as the host would (manifest agreement, ABI check, create with the
/// checked config), then answers calls until the host says goodbye or goes away.
package enum IsolationWorker {
    /// Serves on `fd` and returns the process exit status. Long: the handshake, the library's
    /// checks and the call loop run in the order the host expects them, each failure answered on
    /// the socket before the worker exits.
    package static func serve(fd: Int32) -> Int32 {
        let reader = FrameReader(fd: fd)
        guard case .frame(let bytes) = reader.next(deadlineNs: nil) else { return 3 }
        var hello = WireReader(bytes)
        guard (try? hello.u8()) == FrameType.hello.rawValue,
            let instanceID = try? hello.string(), let manifestPath = try? hello.string(), let libraryPath = try? hello.string(),
            let librarySHA256 = try? hello.string(),
            let dataDirectory = try? hello.string(), let severity = (try? hello.i32()).flatMap(LogSeverity.init(rawValue:)),
            let verbosity = (try? hello.i32()).flatMap(LogVerbosity.init(rawValue:)), let count = try? hello.u32()
        else { return 3 }
        var config: [String: PluginValue] = [:]
        for _ in 0..<count {
            guard let key = try? hello.string(), let value = try? hello.value() else { return 3 }
            config[key] = value
        }
        guard let allowedCount = try? hello.u32() else { return 3 }
        var allowed: [String] = []
        for _ in 0..<allowedCount {
            guard let host = try? hello.string() else { return 3 }
            allowed.append(host)
        }
        guard let httpTimeout = try? hello.f64(), let slotCapacity = try? hello.u32() else { return 3 }
        let slot = slotCapacity > 0 ? SharedCallSlot.attach(fd: 4, capacity: Int(slotCapacity)) : nil
        if slotCapacity > 0 { close(4) }  // mapped (or not): the descriptor is not needed any more
        // The location service lives in the host; an isolated plugin does not get it.
        let environment = HostEnvironment(http: .init(allowedHosts: allowed, timeoutSeconds: httpTimeout))

        let forwarder = LogForwarder(fd: fd, slot: slot)
        let pipeline = LogPipeline(filter: LogFilter(severity: severity, verbosity: verbosity))
        pipeline.attach([forwarder])

        var handles: [PluginHandle] = []
        var ready = WireWriter()
        ready.u8(FrameType.ready.rawValue)
        do {
            // The content the host checked, handed over sealed as fd 5; never the file at the path.
            let library = try PluginLibrary.open(try LibraryImage.adopt(fd: 5, path: libraryPath, sha256: librarySHA256))
            var descriptors = library.descriptors
            if !manifestPath.isEmpty {
                let loaded = PluginManifest.load(path: manifestPath)
                guard let manifest = loaded.manifest else { throw PluginLoadError.manifestProblems(loaded.diagnostics) }
                let problems = library.disagreements(with: manifest)
                guard problems.isEmpty else { throw PluginLoadError.manifestMismatch(path: libraryPath, reason: problems.joined(separator: "; ")) }
                descriptors = manifest.exports.compactMap { export in library.descriptors.first { $0.id == export.id } }
            }
            for descriptor in descriptors {
                handles.append(
                    PluginHandle(
                        try PluginInstance.create(
                            descriptor, of: library, instanceID: instanceID, config: config,
                            dataDirectory: dataDirectory, pipeline: pipeline,
                            environment: environment)))
            }
            ready.bool(true)
            ready.u32(UInt32(handles.count))
            for handle in handles {
                ready.string(handle.pluginID)
                ready.i32(handle.kind.code)
            }
            ready.bool(slot != nil)
            // The ABI the library declares, which the host shows (it never opens the library itself).
            ready.u32(library.abiVersion.major)
            ready.u32(library.abiVersion.minor)
            ready.u32(library.abiVersion.patch)
        } catch {
            for handle in handles.reversed() { handle.destroy() }
            handles = []
            ready.bool(false)
            ready.string("\(error)")
        }
        guard forwarder.send(ready.bytes) else { return 3 }
        if handles.isEmpty { return 0 }

        var lastSeq: UInt32 = 0
        while true {
            let bytes: [UInt8]
            if let slot {
                guard let next = nextRequest(slot, after: &lastSeq, reader: reader) else { break }
                bytes = next
            } else {
                // Spin briefly for the next call (calls often come in bursts), then sleep until one comes.
                guard case .frame(let next) = reader.next(deadlineNs: nil, spinNs: 50_000) else { break }  // the host is gone
                bytes = next
            }
            var request = WireReader(bytes)
            guard let type = try? request.u8() else { break }
            if type == FrameType.shutdown.rawValue { break }
            guard type == FrameType.call.rawValue, let id = try? request.u32(), let index = try? request.u32(),
                let opCode = try? request.u8()
            else { break }
            var answer = WireWriter()
            answer.u8(FrameType.result.rawValue)
            answer.u32(id)
            if let op = WorkerOp(rawValue: opCode), Int(index) < handles.count {
                var body = WireWriter()
                do {
                    try IsolatedCalls.serve(op, handles[Int(index)], &request, into: &body)
                    answer.bool(true)
                    answer.raw(body.bytes)
                } catch {
                    answer.bool(false)
                    answer.string("bad request: \(error)")
                }
            } else {
                answer.bool(false)
                answer.string("unknown call \(opCode) for plugin \(index)")
            }
            guard let slot else {
                guard forwarder.send(answer.bytes) else { break }
                continue
            }
            let fits = slot.postAnswer(answer.bytes, seq: id)
            if slot.takeSleeper(.hostWaiting), !forwarder.send([FrameType.wake.rawValue]) { break }
            if !fits, !forwarder.send(answer.bytes) { break }
        }
        for handle in handles.reversed() { handle.destroy() }
        pipeline.flush()
        return 0
    }

    /// The next request published in the slot (a call frame's payload, or the shutdown frame), after
    /// `lastSeq`, which it advances: spins for it briefly (calls often come in bursts), then sleeps in
    /// poll on the socket until the host's wake frame. Nil when the host is gone or broke the protocol.
    static func nextRequest(_ slot: SharedCallSlot, after lastSeq: inout UInt32, reader: FrameReader) -> [UInt8]? {
        let last = lastSeq
        let arrived = { slot.loadSeq(.requestSeq) != last }
        if !SharedCallSlot.spin(for: 50_000, until: arrived) {
            while true {
                slot.announceSleep(.workerWaiting)
                if arrived() {
                    // The host may have taken the word first: then its wake frame is coming; read it now.
                    if !slot.cancelSleep(.workerWaiting) {
                        switch awaitFrame(reader, .wake) {
                        case .wake?: break
                        case let other: return other == .shutdown ? [FrameType.shutdown.rawValue] : nil
                        }
                    }
                    break
                }
                switch awaitFrame(reader, .wake) {
                case .wake?: continue
                case .shutdown?: return [FrameType.shutdown.rawValue]
                default: return nil
                }
            }
        }
        lastSeq = slot.loadSeq(.requestSeq)
        switch slot.takeRequest() {
        case .bytes(let bytes): return bytes
        case .onSocket:
            // Too large for the slot: the call frame follows on the socket.
            while case .frame(let bytes) = reader.next(deadlineNs: nil) {
                switch bytes.first.flatMap(FrameType.init(rawValue:)) {
                case .wake?: continue
                case .call?, .shutdown?: return bytes
                default: return nil
                }
            }
            return nil
        case .bad: return nil
        }
    }

    /// Reads the socket until a frame of `type`, or shutdown (which it answers instead); nil when the
    /// host is gone or sent anything else.
    private static func awaitFrame(_ reader: FrameReader, _ type: FrameType) -> FrameType? {
        guard case .frame(let bytes) = reader.next(deadlineNs: nil) else { return nil }
        let got = bytes.first.flatMap(FrameType.init(rawValue:))
        return got == type || got == .shutdown ? got : nil
    }

    /// Sends the worker's frames (answers and log records) on the socket, one writer at a time:
    /// plugins may log from their own threads.
    /// Sendable: `fd` and `slot` are `let`s, every write of a frame to `fd` holds `writing`, so frames
    /// never interleave, and the slot's count is an atomic.
    final class LogForwarder: LogDestination, Sendable {
        let fd: Int32
        private let writing = Mutex(())
        /// Where the count of log frames sent is kept, so the host reads the socket after a call only
        /// when there are records to forward.
        let slot: SharedCallSlot?

        init(fd: Int32, slot: SharedCallSlot?) {
            self.fd = fd
            self.slot = slot
        }

        func send(_ frame: [UInt8]) -> Bool { writing.withLock { _ in FrameIO.write(fd, frame) } }

        func write(_ record: LogRecord) {
            var frame = WireWriter()
            frame.u8(FrameType.log.rawValue)
            frame.logRecord(record)
            // Counted after it is on the socket: a host that sees the count finds the frame there.
            if send(frame.bytes) { slot?.word(.logFrames).pointee.wrappingAdd(1, ordering: .releasing) }
        }

        func flush() {}
    }
}

extension IsolationWorker {
    /// Closes every descriptor from `lowest` up (close_range, or each one /proc/self/fd lists).
    package static func closeDescriptors(from lowest: Int32) {
        typealias CloseRange = @convention(c) (UInt32, UInt32, Int32) -> Int32
        if let symbol = dlsym(nil, "close_range"), unsafeBitCast(symbol, to: CloseRange.self)(UInt32(lowest), UInt32.max, 0) == 0 {
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap(Int32.init) where fd >= lowest { close(fd) }
    }
}
