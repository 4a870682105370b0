import Foundation
import HubHostKit

/// `hubhost bench wasm`: what a call into a WebAssembly plugin costs, beside the same C source as a
/// `.so` in process and under `isolation: process`, in the same run: the no-op augmentation (the
/// cost of crossing), and the standard operators' bounded regex on a long input (compute-heavy work
/// in the interpreter against native code).
public struct WasmBenchmark {
    public struct Result: Encodable, Sendable {
        public var iterations: Int
        /// ns per no-op augmentation call.
        public var augmentInProcessNs: Double
        public var augmentIsolatedNs: Double
        public var augmentWasmNs: Double
        /// ns per MATCHES_REGEX compare of `regexInputBytes` bytes.
        public var regexInputBytes: Int
        public var regexNativeNs: Double
        public var regexWasmNs: Double
        /// regexWasmNs / regexNativeNs.
        public var regexRatio: Double
        /// The same module's regex call run by wasmtime (scripts/wasm-regex-yardstick.py), when
        /// python3 has the `wasmtime` package; nil otherwise.
        public var regexWasmtimeNs: Double?
    }

    public var iterations: Int
    /// The `.so` and the `.wasm` built from Plugins/Noop and Plugins/StandardOperators.
    public var noopLibrary: String
    public var noopModule: String
    public var operatorsLibrary: String
    public var operatorsModule: String
    /// scripts/wasm-regex-yardstick.py, to run the yardstick; nil skips it.
    public var wasmtimeYardstick: String?

    public init(
        iterations: Int, noopLibrary: String, noopModule: String, operatorsLibrary: String, operatorsModule: String,
        wasmtimeYardstick: String? = nil
    ) {
        self.wasmtimeYardstick = wasmtimeYardstick
        self.iterations = iterations
        self.noopLibrary = noopLibrary
        self.noopModule = noopModule
        self.operatorsLibrary = operatorsLibrary
        self.operatorsModule = operatorsModule
    }

    /// A plugin.yaml naming `library` for a `.wasm` (the loader checks exports against it).
    private static func manifest(_ id: String, library: String, exports: [(String, PluginKind)]) throws -> PluginManifest {
        let folder = NSTemporaryDirectory() + "hubhost-bench-wasm-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let text = """
            abi: "1.0"
            id: \(id)
            name: \(id)
            version: 1.0.0
            library: \((library as NSString).lastPathComponent)
            exports:
            \(exports.map { "  - {id: \($0.0), kind: \($0.1.rawValue)}" }.joined(separator: "\n"))
            """
        try text.write(toFile: folder + "/plugin.yaml", atomically: true, encoding: .utf8)
        guard let manifest = PluginManifest.load(path: folder + "/plugin.yaml").manifest else {
            throw PluginLoadError.manifestMismatch(path: library, reason: "the benchmark's plugin.yaml does not read")
        }
        return manifest
    }

    public func run(rounds: Int = 3, progress: (String) -> Void = { _ in }) throws -> Result {
        let quiet = LogPipeline(filter: LogFilter(severity: .none))
        progress("augmentation: in process and isolated")
        let crossing = try IsolationBenchmark(iterations: iterations, libraryPath: noopLibrary).run(rounds: rounds)

        let noop = try WasmPluginInstance(
            file: try WasmModuleFile.read(path: noopModule),
            manifest: try Self.manifest(
                "noop", library: noopModule, exports: [("noop-operator", .triggerOperator), ("noop-augmentation", .augmentation)]),
            instanceID: "bench", config: [:], pipeline: quiet, budget: WasmBudget())
        let augmentation = AugmentationPlugin(PluginHandle(wasm: noop, index: 1))
        let event = AugmentableEvent(
            id: "bench", typeCode: 17, name: "PLAYER LOADED", timeMs: 1_402_358_400_000,
            attributes: [("Level", .int(3)), ("Mode", .string("arcade")), ("Score", .double(1234.5))])
        var bestWasm = Double.infinity
        for round in 1...max(1, rounds) {
            progress("augmentation in wasm, round \(round)/\(rounds)")
            let start = Clock.monotonicNs()
            for _ in 0..<iterations where augmentation.augment(event).status != 0 {
                throw PluginLoadError.manifestMismatch(path: noopModule, reason: "the wasm augmentation failed")
            }
            bestWasm = min(bestWasm, Double(Clock.monotonicNs() - start) / Double(iterations))
        }

        // MATCHES_REGEX on 10,000 bytes with a pattern that must scan all of them.
        let text = String(repeating: "ab", count: 5_000)
        let pattern = "(ab)*c$"
        let ids = ["equals", "is-not-equal", "greater-than", "less-than", "is-blank", "is-not-blank", "matches-regex", "does-not-match-regex"]
        let library = try PluginLibrary.open(path: operatorsLibrary)
        guard let descriptor = library.descriptors.first(where: { $0.id == "matches-regex" }) else {
            throw PluginLoadError.manifestMismatch(path: operatorsLibrary, reason: "no matches-regex operator")
        }
        let native = TriggerOperatorPlugin(
            try PluginInstance.create(
                descriptor, of: library, instanceID: "bench", config: [:], dataDirectory: NSTemporaryDirectory(), pipeline: quiet))
        let operators = try WasmPluginInstance(
            file: try WasmModuleFile.read(path: operatorsModule),
            manifest: try Self.manifest("ops", library: operatorsModule, exports: ids.map { ($0, .triggerOperator) }),
            instanceID: "bench", config: [:], pipeline: quiet, budget: WasmBudget(fuelPerCall: 2_000_000_000))
        let guest = TriggerOperatorPlugin(PluginHandle(wasm: operators, index: ids.firstIndex(of: "matches-regex")!))
        let regexIterations = max(1, iterations / 1000)
        var best = (native: Double.infinity, wasm: Double.infinity)
        for round in 1...max(1, rounds) {
            progress("regex on \(text.utf8.count) bytes, round \(round)/\(rounds): \(regexIterations) calls each")
            var start = Clock.monotonicNs()
            for _ in 0..<regexIterations where native.compare(event: .string(text), trigger: .string(pattern)).status != 0 {
                throw PluginLoadError.manifestMismatch(path: operatorsLibrary, reason: "the native regex failed")
            }
            best.native = min(best.native, Double(Clock.monotonicNs() - start) / Double(regexIterations))
            start = Clock.monotonicNs()
            for _ in 0..<regexIterations {
                let answer = guest.compare(event: .string(text), trigger: .string(pattern))
                guard answer.status == 0 else { throw PluginLoadError.manifestMismatch(path: operatorsModule, reason: answer.reason) }
            }
            best.wasm = min(best.wasm, Double(Clock.monotonicNs() - start) / Double(regexIterations))
        }
        progress("regex in wasmtime (yardstick)")
        let wasmtime = wasmtimeYardstick.flatMap { Self.runYardstick($0, module: operatorsModule) }
        return Result(
            iterations: iterations, augmentInProcessNs: crossing.inProcessNsPerCall, augmentIsolatedNs: crossing.isolatedNsPerCall,
            augmentWasmNs: bestWasm, regexInputBytes: text.utf8.count, regexNativeNs: best.native, regexWasmNs: best.wasm,
            regexRatio: best.wasm / best.native, regexWasmtimeNs: wasmtime)
    }

    /// ns per call as the yardstick script prints it (µs), or nil when it cannot run (no python3,
    /// no wasmtime package).
    static func runYardstick(_ script: String, module: String) -> Double? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, module]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last,
            let micros = Double(line.trimmingCharacters(in: .whitespaces))
        else { return nil }
        return micros * 1000
    }
}
