import Foundation
import HubHostKit
import Synchronization

/// `hubhost bench isolation`: the round trip of one augmentation call into the no-op augmentation,
/// in-process and through process isolation (a worker and its shared call slot), in the same run,
/// beside the two transports' floors: a bare socketpair round trip and a bare shared-memory one.
public struct IsolationBenchmark {
    public struct Result: Encodable, Sendable {
        public var iterations: Int
        public var library: String
        public var inProcessNsPerCall: Double
        public var isolatedNsPerCall: Double
        /// The same isolated call with the worker's shared slot turned off: on the socket alone.
        public var socketOnlyNsPerCall: Double
        public var inProcessCallsPerSecond: Double
        public var isolatedCallsPerSecond: Double
        /// isolated / in-process.
        public var ratio: Double
        /// One byte each way over a socketpair between two threads, blocking reads: a call's
        /// transport when both sides sleep.
        public var socketpairRoundTripNs: Double
        /// One word each way through shared memory between two spinning threads: the floor of a
        /// call through the shared slot.
        public var sharedMemoryRoundTripNs: Double
    }

    public var iterations: Int
    public var libraryPath: String

    public init(iterations: Int, libraryPath: String) {
        self.iterations = iterations
        self.libraryPath = libraryPath
    }

    public func run(rounds: Int = 3, progress: (String) -> Void = { _ in }) throws -> Result {
        let quiet = LogPipeline(filter: LogFilter(severity: .none))
        let library = try PluginLibrary.open(path: libraryPath)
        guard let index = library.descriptors.firstIndex(where: { $0.kind == .augmentation }) else {
            throw PluginLoadError.manifestMismatch(path: libraryPath, reason: "it exports no augmentation plugin to call")
        }
        let local = AugmentationPlugin(
            try PluginInstance.create(
                library.descriptors[index], of: library, instanceID: "bench", config: [:],
                dataDirectory: NSTemporaryDirectory(), pipeline: quiet))
        guard let executable = PluginRegistry.defaultWorkerExecutable() else {
            throw PluginLoadError.workerFailed(instance: "bench", reason: "no hubhost executable found to run the worker")
        }
        var settings = PluginWorker.Settings(
            instanceID: "bench", manifestPath: "", library: library.image,
            dataDirectory: NSTemporaryDirectory(), config: [:], logFilter: LogFilter(severity: .none),
            executable: executable)
        let worker = PluginWorker(settings: settings, pipeline: quiet)
        settings.sharedSlot = false
        let socketWorker = PluginWorker(settings: settings, pipeline: quiet)
        defer {
            worker.stop()
            socketWorker.stop()
            local.handle.destroy()
        }
        let exports = try worker.start()
        _ = try socketWorker.start()
        let remote = AugmentationPlugin(PluginHandle(worker: worker, index: index, pluginID: exports[index].id, kind: .augmentation))
        let socketOnly = AugmentationPlugin(
            PluginHandle(worker: socketWorker, index: index, pluginID: exports[index].id, kind: .augmentation))
        // A typical small event: a name and three attributes.
        let event = AugmentableEvent(
            id: "bench", typeCode: 17, name: "PLAYER LOADED", timeMs: 1_402_358_400_000,
            attributes: [("Level", .int(3)), ("Mode", .string("arcade")), ("Score", .double(1234.5))])
        var best = (
            local: Double.infinity, remote: Double.infinity, socketOnly: Double.infinity, socket: Double.infinity, shared: Double.infinity
        )
        /// The mean time of `iterations` calls into an isolated plugin; a failed call ends the bench.
        func isolatedNsPerCall(_ plugin: AugmentationPlugin) throws -> Double {
            let start = Clock.monotonicNs()
            for _ in 0..<iterations {
                let outcome = plugin.augment(event)
                guard outcome.status == 0 else { throw PluginLoadError.workerFailed(instance: "bench", reason: outcome.message) }
            }
            return Double(Clock.monotonicNs() - start) / Double(iterations)
        }
        for round in 1...max(1, rounds) {
            progress("round \(round)/\(rounds): \(iterations) calls each")
            let start = Clock.monotonicNs()
            for _ in 0..<iterations where local.augment(event).status != 0 {
                throw PluginLoadError.manifestMismatch(path: libraryPath, reason: "the in-process augmentation failed")
            }
            best.local = min(best.local, Double(Clock.monotonicNs() - start) / Double(iterations))
            best.remote = min(best.remote, try isolatedNsPerCall(remote))
            best.socketOnly = min(best.socketOnly, try isolatedNsPerCall(socketOnly))
            // At most 20,000 sleeping round trips (about 40 µs each here): enough for a steady mean.
            best.socket = min(best.socket, Self.socketpairRoundTripNs(iterations: min(iterations, 20_000)))
            best.shared = min(best.shared, Self.sharedMemoryRoundTripNs(iterations: iterations))
        }
        return Result(
            iterations: iterations, library: libraryPath, inProcessNsPerCall: best.local, isolatedNsPerCall: best.remote,
            socketOnlyNsPerCall: best.socketOnly,
            inProcessCallsPerSecond: 1e9 / best.local, isolatedCallsPerSecond: 1e9 / best.remote, ratio: best.remote / best.local,
            socketpairRoundTripNs: best.socket, sharedMemoryRoundTripNs: best.shared)
    }

    /// Mean ns of a one-byte ping answered by an echo thread over a socketpair (blocking reads).
    static func socketpairRoundTripNs(iterations: Int) -> Double {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { return .nan }
        let (ping, echo) = (pair[0], pair[1])
        let finished = DispatchSemaphore(value: 0)
        Thread {
            var byte: UInt8 = 0
            while read(echo, &byte, 1) == 1, write(echo, &byte, 1) == 1 {}
            finished.signal()
        }.start()
        var byte: UInt8 = 1
        let start = Clock.monotonicNs()
        for _ in 0..<iterations where write(ping, &byte, 1) != 1 || read(ping, &byte, 1) != 1 { break }
        let ns = Double(Clock.monotonicNs() - start) / Double(iterations)
        shutdown(ping, Int32(SHUT_WR))  // the echo thread reads the end and stops
        finished.wait()
        close(ping)
        close(echo)
        return ns
    }

    /// Mean ns of a ping answered by a spinning echo thread through two words on their own cache lines.
    static func sharedMemoryRoundTripNs(iterations: Int) -> Double {
        let words = SharedWords()
        let finished = DispatchSemaphore(value: 0)
        Thread {
            var seen: UInt32 = 0
            while true {
                let ping = words.ping.load(ordering: .acquiring)
                if ping == seen { continue }
                if ping == .max { break }
                seen = ping
                words.echo.store(ping, ordering: .releasing)
            }
            finished.signal()
        }.start()
        let start = Clock.monotonicNs()
        for i in 1...UInt32(iterations) {
            words.ping.store(i, ordering: .releasing)
            while words.echo.load(ordering: .acquiring) != i {}
        }
        let ns = Double(Clock.monotonicNs() - start) / Double(iterations)
        words.ping.store(.max, ordering: .releasing)
        finished.wait()
        return ns
    }

    /// Two atomics 128 bytes apart, so each side writes its own cache line.
    private final class SharedWords: Sendable {
        let ping = Atomic<UInt32>(0)
        private let padding = InlineArray<15, UInt64>(repeating: 0)
        let echo = Atomic<UInt32>(0)
    }
}
