import Foundation
import HubHostABI
import HubHostKit

/// `hubhost bench abi`: the cost of one call through the plugin ABI into a no-op trigger operator
/// (in-process), beside a direct Swift function call doing the same work, in the same run.
public struct ABIBenchmark {
    public struct Result: Encodable, Sendable {
        public var iterations: Int
        public var library: String
        /// ns per call through the ABI (hh_trigger_operator_v1_t.compare of the noop plugin).
        public var abiNsPerCall: Double
        /// ns per call of a Swift function with the same signature (the baseline).
        public var swiftNsPerCall: Double
        /// abiNsPerCall / swiftNsPerCall.
        public var ratio: Double
        public var abiCallsPerSecond: Double
    }

    public var iterations: Int
    public var libraryPath: String

    public init(iterations: Int, libraryPath: String) {
        self.iterations = iterations
        self.libraryPath = libraryPath
    }

    /// Runs both loops `rounds` times and keeps each one's best round (least disturbed by the machine).
    public func run(rounds: Int = 5, progress: (String) -> Void = { _ in }) throws -> Result {
        let library = try PluginLibrary.open(path: libraryPath)
        guard let descriptor = library.descriptors.first(where: { $0.kind == .triggerOperator }) else {
            throw PluginLoadError.manifestMismatch(path: libraryPath, reason: "it exports no trigger_operator plugin to call")
        }
        let instance = try PluginInstance.create(
            descriptor, of: library, instanceID: "bench", config: [:],
            dataDirectory: NSTemporaryDirectory(), pipeline: LogPipeline(filter: LogFilter(severity: .none)))
        defer { instance.destroy() }
        let compare = instance.api(hh_trigger_operator_v1_t.self).pointee.compare!
        let handle = instance.handle
        var event = hh_value_t()
        var trigger = hh_value_t()
        event.type = HH_VALUE_INT64
        event.of.int64 = 42
        trigger.type = HH_VALUE_INT64
        trigger.of.int64 = 42

        var bestABI = Double.infinity
        var bestSwift = Double.infinity
        var sink = 0
        for round in 1...max(1, rounds) {
            progress("round \(round)/\(rounds): \(iterations) calls each")
            var result = false
            var start = Clock.monotonicNs()
            for _ in 0..<iterations {
                _ = compare(handle, &event, &trigger, &result)
                if result { sink &+= 1 }
            }
            bestABI = min(bestABI, Double(Clock.monotonicNs() - start) / Double(iterations))

            start = Clock.monotonicNs()
            for _ in 0..<iterations {
                _ = swiftNoopCompare(handle, &event, &trigger, &result)
                if result { sink &+= 1 }
            }
            bestSwift = min(bestSwift, Double(Clock.monotonicNs() - start) / Double(iterations))
        }
        precondition(sink == 2 * iterations * max(1, rounds), "both no-op compares must answer true")
        return Result(
            iterations: iterations, library: libraryPath, abiNsPerCall: bestABI, swiftNsPerCall: bestSwift,
            ratio: bestABI / max(bestSwift, 0.001), abiCallsPerSecond: 1e9 / bestABI)
    }
}

/// The baseline: the noop plugin's compare written as a Swift function the optimizer may not inline
/// or remove, called directly.
@inline(never)
func swiftNoopCompare(
    _ instance: UnsafeMutableRawPointer?, _ event: UnsafePointer<hh_value_t>, _ trigger: UnsafePointer<hh_value_t>,
    _ result: UnsafeMutablePointer<Bool>
) -> hh_status_t {
    result.pointee = true
    return HH_OK
}
