import Foundation
import HubHostKit

/// `hubhost bench isolation`: the round trip of one augmentation call into the no-op augmentation,
/// in-process and through process isolation (a worker over a socketpair), in the same run.
public struct IsolationBenchmark {
    public struct Result: Encodable, Sendable {
        public var iterations: Int
        public var library: String
        public var inProcessNsPerCall: Double
        public var isolatedNsPerCall: Double
        public var inProcessCallsPerSecond: Double
        public var isolatedCallsPerSecond: Double
        /// isolated / in-process.
        public var ratio: Double
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
        let worker = PluginWorker(
            settings: .init(
                instanceID: "bench", manifestPath: "", libraryPath: libraryPath,
                dataDirectory: NSTemporaryDirectory(), config: [:], logFilter: LogFilter(severity: .none),
                executable: executable), pipeline: quiet)
        defer {
            worker.stop()
            local.handle.destroy()
        }
        let exports = try worker.start()
        let remote = AugmentationPlugin(PluginHandle(worker: worker, index: index, pluginID: exports[index].id, kind: .augmentation))
        // A typical small event: a name and three attributes.
        let event = AugmentableEvent(
            id: "bench", typeCode: 17, name: "PLAYER LOADED", timeMs: 1_402_358_400_000,
            attributes: [("Level", .int(3)), ("Mode", .string("arcade")), ("Score", .double(1234.5))])
        var best = (local: Double.infinity, remote: Double.infinity)
        for round in 1...max(1, rounds) {
            progress("round \(round)/\(rounds): \(iterations) calls each")
            var start = Clock.monotonicNs()
            for _ in 0..<iterations where local.augment(event).status != 0 {
                throw PluginLoadError.manifestMismatch(path: libraryPath, reason: "the in-process augmentation failed")
            }
            best.local = min(best.local, Double(Clock.monotonicNs() - start) / Double(iterations))
            start = Clock.monotonicNs()
            for _ in 0..<iterations {
                let outcome = remote.augment(event)
                guard outcome.status == 0 else {
                    throw PluginLoadError.workerFailed(instance: "bench", reason: outcome.message)
                }
            }
            best.remote = min(best.remote, Double(Clock.monotonicNs() - start) / Double(iterations))
        }
        return Result(
            iterations: iterations, library: libraryPath, inProcessNsPerCall: best.local, isolatedNsPerCall: best.remote,
            inProcessCallsPerSecond: 1e9 / best.local, isolatedCallsPerSecond: 1e9 / best.remote, ratio: best.remote / best.local)
    }
}
