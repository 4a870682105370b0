import Foundation
import HubHostABI
import HubHostKit
import Synchronization

/// What a conformance test works with: the library under test, its manifest, a valid config, a
/// scratch data directory, a capture of what the plugins log, and the per-call budget.
/// Sendable: every field is a `let` of a Sendable type.
public final class ConformanceContext: Sendable {
    public let target: ValidationTarget
    public let budget: CallBudget
    public let dataDirectory: String
    let pipeline: LogPipeline
    let capture = LogCapture()

    init(target: ValidationTarget, budget: CallBudget) throws {
        self.target = target
        self.budget = budget
        dataDirectory = NSTemporaryDirectory() + "hubhost-plugin-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        pipeline = LogPipeline(filter: LogFilter(severity: .info, verbosity: .info))
        pipeline.attach([capture])
    }

    /// What plugins under test get beyond the services table: a fixed location, and an HTTP service
    /// that allows no host (the suite never reaches the network).
    static let environment = HostEnvironment(
        http: .init(allowedHosts: [], timeoutSeconds: 2),
        location: LocationService(
            fixed: Location(
                latitude: 47.6097, longitude: -122.3422, accuracyMeters: nil, timeMs: nil,
                locationID: "test-place", name: "Test Place", address: "1 Test Street")))

    func cleanUp() { try? FileManager.default.removeItem(atPath: dataDirectory) }

    /// The library under test, loaded through the host's loader (a `.so`) or read and described
    /// (a `.wasm`).
    func library() throws -> PluginBinary {
        guard let path = target.libraryPath else { throw ConformanceFailure(target.libraryProblem ?? "no library to load") }
        do {
            return try PluginBinary.open(path: path, mappingFile: target.mapsLibraryFile)
        } catch {
            throw ConformanceFailure("\(error)")
        }
    }

    /// Creates `id` with `config` under the call budget. Throws a failure when create fails (with
    /// the plugin's message), unless `allowFailure`, when it returns nil after checking that the
    /// failure is explained.
    func create(_ id: String, config: [String: PluginValue], allowFailure: Bool = false) throws -> PluginHandle? {
        let library = try library()
        guard library.exports.contains(where: { $0.id == id }) else { throw ConformanceFailure("the library does not export '\(id)'") }
        do {
            return try budget.run("\(id).create") {
                try library.create(
                    id, instanceID: "test", config: config, dataDirectory: dataDirectory, pipeline: pipeline, environment: Self.environment)
            }
        } catch PluginLoadError.createFailed(_, _, let status, let message) {
            try checkStatus(status, message: message, call: "\(id).create")
            guard allowFailure else {
                throw ConformanceFailure(
                    "create failed with a valid config (\(StatusCode.name(status))): \(message.isEmpty ? "no message" : message)")
            }
            guard !message.isEmpty else {
                throw ConformanceFailure(
                    "create failed (\(StatusCode.name(status))) without explaining why: call report_error before returning a failure")
            }
            return nil
        }
    }

    /// Fails on a status the headers do not define, and on HH_OK reported as a failure.
    func checkStatus(_ status: Int32, message: String = "", call: String) throws {
        guard (0...9).contains(status) else {
            throw ConformanceFailure("\(call) returned status \(status), which the ABI does not define (see hh_status_t in hubhost_plugin.h)")
        }
    }

    /// Runs `body` on `threads` threads at once, `iterations` times each, and rethrows the first failure.
    func concurrently(threads: Int = 8, iterations: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
        final class FirstError: Sendable {
            let error = Mutex<Error?>(nil)
        }
        let first = FirstError()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for i in 0..<iterations {
                do { try body(thread * iterations + i) } catch {
                    first.error.withLock { if $0 == nil { $0 = error } }
                    return
                }
            }
        }
        if let error = first.error.withLock({ $0 }) { throw error }
    }
}
