import Foundation

/// The worker side of `isolation: process`: `hubhost worker --fd 3` runs this. It loads one
/// plugin library exactly as the host would (manifest agreement, ABI check, create with the
/// checked config), then answers calls until the host says goodbye or goes away.
public enum IsolationWorker {
    /// Serves on `fd` and returns the process exit status.
    public static func serve(fd: Int32) -> Int32 {
        let reader = FrameReader(fd: fd)
        guard case .frame(let bytes) = reader.next(deadlineNs: nil) else { return 3 }
        var hello = WireReader(bytes)
        guard (try? hello.u8()) == FrameType.hello.rawValue,
            let instanceID = try? hello.string(), let manifestPath = try? hello.string(), let libraryPath = try? hello.string(),
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
        guard let httpTimeout = try? hello.f64() else { return 3 }
        // The location service lives in the host; an isolated plugin does not get it.
        let environment = HostEnvironment(http: .init(allowedHosts: allowed, timeoutSeconds: httpTimeout))

        let forwarder = LogForwarder(fd: fd)
        let pipeline = LogPipeline(filter: LogFilter(severity: severity, verbosity: verbosity))
        pipeline.attach([forwarder])

        var handles: [PluginHandle] = []
        var ready = WireWriter()
        ready.u8(FrameType.ready.rawValue)
        do {
            let library = try PluginLibrary.open(path: libraryPath)
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
        } catch {
            for handle in handles.reversed() { handle.destroy() }
            handles = []
            ready.bool(false)
            ready.string("\(error)")
        }
        guard forwarder.send(ready.bytes) else { return 3 }
        if handles.isEmpty { return 0 }

        while true {
            // Spin briefly for the next call (calls often come in bursts), then sleep until one comes.
            guard case .frame(let bytes) = reader.next(deadlineNs: nil, spinNs: 50_000) else { break }  // the host is gone
            var request = WireReader(bytes)
            guard let type = try? request.u8() else { break }
            if type == FrameType.shutdown.rawValue { break }
            guard type == FrameType.call.rawValue, let id = try? request.u32(), let index = try? request.u32(),
                let opCode = try? request.u8()
            else { break }
            var answer = WireWriter()
            answer.u8(FrameType.result.rawValue)
            answer.u32(id)
            guard let op = WorkerOp(rawValue: opCode), Int(index) < handles.count else {
                answer.bool(false)
                answer.string("unknown call \(opCode) for plugin \(index)")
                guard forwarder.send(answer.bytes) else { break }
                continue
            }
            var body = WireWriter()
            do {
                try IsolatedCalls.serve(op, handles[Int(index)], &request, into: &body)
                answer.bool(true)
                answer.raw(body.bytes)
            } catch {
                answer.bool(false)
                answer.string("bad request: \(error)")
            }
            guard forwarder.send(answer.bytes) else { break }
        }
        for handle in handles.reversed() { handle.destroy() }
        pipeline.flush()
        return 0
    }

    /// Sends the worker's frames (answers and log records) on the socket, one writer at a time:
    /// plugins may log from their own threads.
    /// Safe to share: `fd` is a `let`, and every write of a frame to it runs under `lock`, so frames never interleave.
    final class LogForwarder: LogDestination, @unchecked Sendable {
        let fd: Int32
        let lock = NSLock()

        init(fd: Int32) { self.fd = fd }

        func send(_ frame: [UInt8]) -> Bool { lock.withLock { FrameIO.write(fd, frame) } }

        func write(_ record: LogRecord) {
            var frame = WireWriter()
            frame.u8(FrameType.log.rawValue)
            frame.logRecord(record)
            _ = send(frame.bytes)
        }

        func flush() {}
    }
}
