import Foundation
import HubHostABI
import Synchronization
@_spi(Fuzzing) import WasmKit

/// The functions a guest may import: the `hubhost` module (hubhost_wasm.h: log, report_error,
/// monotonic_ns, config_get, and the host HTTP service under the instance's `http_allow` as
/// http_fetch and http_take) and, because wasi-libc's startup and stdio name them, the WASI
/// preview 1 functions. Of WASI only the clocks and random answer; every other function the module
/// imports answers ENOSYS, and `proc_exit` traps: a guest has no files, sockets or environment.
/// Anything else the module imports makes instantiation fail with the import's name.
/// @unchecked: it holds the guest's WasmKit `Memory` (a handle into a store that is not Sendable) and
/// per-call state, used only inside a call, which WasmPluginInstance's lock serialises; `lastError`
/// is also in a Mutex of its own.
final class WasmHostImports: @unchecked Sendable {
    let instanceID: String
    let config: [String: PluginValue]
    let pipeline: LogPipeline
    /// Which hosts http_fetch may reach, and how long a request may take.
    let http: HostEnvironment.HTTPPolicy
    /// The guest's memory once instantiated (imports are defined before it exists).
    var memory: Memory?
    private let lastError = Mutex("")
    /// What the last http_fetch left for http_take: the encoded response or a failure's message.
    private var httpHeld: [UInt8]?
    /// When the call in progress must end (monotonic ns; `.max` between calls). Set once per call
    /// by WasmPluginInstance (or by WasmGuest around an invocation made outside one) and read by
    /// the imports on the same thread: WasmPluginInstance runs one call at a time, so no lock is
    /// needed.
    var deadlineNs: UInt64 = .max

    /// Thrown by an import called past `deadlineNs`: it unwinds the guest, and WasmGuest answers
    /// the call as a timeout.
    struct DeadlinePassed: Error {}

    /// Throws DeadlinePassed once the call's deadline has passed.
    private func checkDeadline() throws(DeadlinePassed) {
        if Clock.monotonicNs() >= deadlineNs { throw DeadlinePassed() }
    }

    init(instanceID: String, config: [String: PluginValue], pipeline: LogPipeline, http: HostEnvironment.HTTPPolicy = .init()) {
        self.instanceID = instanceID
        self.config = config
        self.pipeline = pipeline
        self.http = http
    }

    /// The last message the guest gave report_error (then cleared).
    func takeError() -> String {
        lastError.withLock { lastError in
            defer { lastError = "" }
            return lastError
        }
    }

    static let wasiModule = "wasi_snapshot_preview1"
    /// WASI's errno for "function not supported".
    static let wasiNoSys: Int32 = 52
    /// WASI's errno for "bad file descriptor".
    static let wasiBadDescriptor: Int32 = 8

    /// The imports for `file`'s module in `store`.
    func imports(for file: WasmModuleFile, store: Store) throws -> Imports {
        var imports = Imports()
        for item in file.module.imports {
            guard case .function = item.descriptor else {
                throw PluginLoadError.notAWasmPlugin(
                    path: file.path, reason: "it imports \(item.module).\(item.name), which is not a function; a plugin imports functions only")
            }
            guard let type = file.importedFunctionType(module: item.module, item.name) else { continue }
            let function: Function
            switch item.module {
            case HH_WASM_IMPORT_MODULE_NAME:
                guard let made = hubhostFunction(item.name, type: type, store: store) else {
                    throw PluginLoadError.notAWasmPlugin(
                        path: file.path, reason: "it imports hubhost.\(item.name) \(type), which this host does not offer with that signature")
                }
                function = made
            case Self.wasiModule:
                function = wasiFunction(item.name, type: type, store: store)
            default:
                throw PluginLoadError.notAWasmPlugin(
                    path: file.path, reason: "it imports \(item.module).\(item.name); a plugin may import only from 'hubhost' and a few of WASI")
            }
            imports.define(module: item.module, name: item.name, function)
        }
        return imports
    }

    // MARK: hubhost

    private func hubhostFunction(_ name: String, type: FunctionType, store: Store) -> Function? {
        let want: (params: [ValueType], results: [ValueType])
        switch name {
        case "log": want = ([.i32, .i32, .i32, .i32], [])
        case "report_error": want = ([.i32, .i32, .i32], [])
        case "monotonic_ns": want = ([], [.i64])
        case "config_get": want = ([.i32, .i32, .i32, .i32], [.i32])
        case "http_fetch": want = ([.i32, .i32, .i32], [.i32])
        case "http_take": want = ([.i32, .i32], [.i32])
        default: return nil
        }
        guard type.parameters == want.params, type.results == want.results else { return nil }
        return Function(store: store, parameters: want.params, results: want.results) { [unowned self] _, args in
            // Every import is a point where a call past its deadline ends: a guest that waits on
            // the host (HTTP above all) burns no fuel, so fuel alone would not stop it.
            try self.checkDeadline()
            switch name {
            case "log":
                self.log(severity: args[0].i32, verbosity: args[1].i32, pointer: args[2].i32, length: args[3].i32)
                return []
            case "report_error":
                let message = self.string(at: args[1].i32, length: args[2].i32)
                self.lastError.withLock { $0 = message }
                return []
            case "monotonic_ns": return [.i64(Clock.monotonicNs())]
            case "http_fetch": return [.i32(UInt32(bitPattern: try self.httpFetch(args[0].i32, args[1].i32, lengthAt: args[2].i32)))]
            case "http_take": return [.i32(UInt32(bitPattern: self.httpTake(args[0].i32, capacity: args[1].i32)))]
            default:
                return [.i32(UInt32(bitPattern: self.configGet(args[0].i32, args[1].i32, args[2].i32, args[3].i32)))]
            }
        }
    }

    /// Guest bytes as a string (lossy UTF-8); empty when out of bounds.
    func string(at pointer: UInt32, length: UInt32) -> String {
        guard let memory, Int(pointer) + Int(length) <= memory.byteCount else { return "" }
        return memory.withUnsafeBufferPointer(offset: UInt(pointer), count: Int(length)) { String(decoding: $0, as: UTF8.self) }
    }

    private func log(severity: UInt32, verbosity: UInt32, pointer: UInt32, length: UInt32) {
        guard let severity = LogSeverity(rawValue: Int32(bitPattern: severity)), severity != .none,
            let verbosity = LogVerbosity(rawValue: Int32(bitPattern: verbosity)), verbosity != .none,
            pipeline.allows(severity: severity, verbosity: verbosity)
        else { return }
        pipeline.log(severity, verbosity, source: instanceID, string(at: pointer, length: length))
    }

    /// The tagged value of `key` into the guest's buffer: its length, or -1 when the key has none.
    private func configGet(_ keyPointer: UInt32, _ keyLength: UInt32, _ out: UInt32, _ capacity: UInt32) -> Int32 {
        guard let value = config[string(at: keyPointer, length: keyLength)], let memory else { return -1 }
        var writer = WireWriter()
        writer.value(value)
        let bytes = writer.bytes
        guard bytes.count <= Int(capacity) else { return Int32(clamping: bytes.count) }
        guard Int(out) + bytes.count <= memory.byteCount else { return -1 }
        memory.withUnsafeMutableBufferPointer(offset: UInt(out), count: bytes.count) { $0.copyBytes(from: bytes) }
        return Int32(bytes.count)
    }

    // MARK: HTTP

    /// The most bytes an encoded HTTP request from a guest may have (a body of up to this much).
    static let maxHTTPRequestBytes = 16 << 20

    /// Decodes the guest's request, performs it as an in-process plugin's would be, and holds the
    /// encoded response (or the failure's message) for http_take; writes its length at `lengthAt`.
    private func httpFetch(_ pointer: UInt32, _ length: UInt32, lengthAt: UInt32) throws(DeadlinePassed) -> Int32 {
        httpHeld = nil
        guard let memory, Int(length) <= Self.maxHTTPRequestBytes, Int(pointer) + Int(length) <= memory.byteCount,
            Int(lengthAt) + 4 <= memory.byteCount
        else { return HH_ERR_INVALID_ARGUMENT }
        let bytes = memory.withUnsafeBufferPointer(offset: UInt(pointer), count: Int(length)) { [UInt8]($0) }
        var reader = WireReader(bytes)
        var request: PluginHTTPRequest
        do {
            let method = try reader.string()
            let url = try reader.string()
            let headerCount = Int(try reader.u32())
            // Each header takes at least 8 bytes: a count past that is a lie, refused before any loop.
            guard headerCount <= bytes.count / 8 else { throw WireError(description: "\(headerCount) headers") }
            var headers: [String: String] = [:]
            for _ in 0..<headerCount { headers[try reader.string()] = try reader.string() }
            let body = try reader.data()
            request = PluginHTTPRequest(
                method: method.isEmpty ? "GET" : method, url: url, headers: headers, body: body.isEmpty ? nil : body, timeoutMs: try reader.u32())
        } catch {
            return HH_ERR_INVALID_ARGUMENT
        }
        // The request gets at most the call's time left (its own timeout_ms and http_timeout still
        // apply when shorter), so a guest cannot wait on the network past its deadline.
        let now = Clock.monotonicNs()
        guard now < deadlineNs else { throw DeadlinePassed() }
        if deadlineNs != .max {
            let leftMs = UInt32(clamping: max(1, (deadlineNs - now) / 1_000_000))
            request.timeoutMs = request.timeoutMs == 0 ? leftMs : min(request.timeoutMs, leftMs)
        }
        var held = WireWriter()
        let status: Int32
        switch request.perform(policy: http, instanceID: instanceID, pipeline: pipeline) {
        case .success(let response):
            held.i32(Int32(clamping: response.status))
            held.u32(UInt32(response.headers.count))
            for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) {
                held.string(name)
                held.string(value)
            }
            held.data(response.body)
            status = HH_OK
        case .failure(let failure):
            held.raw(Array((failure.report ?? failure.ioFailure ?? "").utf8))
            status = failure.status
        }
        httpHeld = held.bytes
        _ = self.store(UInt32(held.bytes.count), at: lengthAt)
        return status
    }

    private func httpTake(_ out: UInt32, capacity: UInt32) -> Int32 {
        guard let held = httpHeld else { return -1 }
        httpHeld = nil
        guard let memory, held.count <= Int(capacity), Int(out) + held.count <= memory.byteCount else { return -1 }
        if !held.isEmpty { memory.withUnsafeMutableBufferPointer(offset: UInt(out), count: held.count) { $0.copyBytes(from: held) } }
        return Int32(held.count)
    }

    // MARK: WASI

    private func wasiFunction(_ name: String, type: FunctionType, store: Store) -> Function {
        Function(store: store, type: type) { [unowned self] _, args in
            switch (name, type.parameters, type.results) {
            case ("clock_time_get", [.i32, .i64, .i32], [.i32]):
                // A guest that spins on the clock waits for time to pass: the deadline ends it too.
                try self.checkDeadline()
                // Clock 0 is the wall clock, every other one monotonic: both in nanoseconds.
                let now = args[0].i32 == 0 ? UInt64(max(0, Date().timeIntervalSince1970 * 1e9)) : Clock.monotonicNs()
                return [.i32(UInt32(bitPattern: self.store(now, at: args[2].i32) ? 0 : 28))]
            case ("random_get", [.i32, .i32], [.i32]):
                return [.i32(self.fillRandom(at: args[0].i32, count: args[1].i32) ? 0 : 28)]
            case ("fd_prestat_get", [.i32, .i32], [.i32]):
                // "No such descriptor" ends wasi-libc's scan for preopened folders: a guest has none.
                // Any other error there makes its start-up (stdio's, with fopen linked) exit.
                return [.i32(UInt32(Self.wasiBadDescriptor))]
            case ("proc_exit", _, _):
                throw PluginCallError.failed(instance: self.instanceID, status: HH_ERR_INTERNAL, message: "the plugin called exit")
            default:
                // Not offered: a single i32 errno result says so; anything else traps.
                guard type.results == [.i32] else {
                    throw PluginCallError.failed(instance: self.instanceID, status: HH_ERR_UNSUPPORTED, message: "WASI \(name) is not offered")
                }
                return [.i32(UInt32(Self.wasiNoSys))]
            }
        }
    }

    private func store<Integer: FixedWidthInteger>(_ value: Integer, at pointer: UInt32) -> Bool {
        let size = MemoryLayout<Integer>.size
        guard let memory, Int(pointer) + size <= memory.byteCount else { return false }
        memory.withUnsafeMutableBufferPointer(offset: UInt(pointer), count: size) { $0.storeBytes(of: value.littleEndian, as: Integer.self) }
        return true
    }

    private func fillRandom(at pointer: UInt32, count: UInt32) -> Bool {
        guard let memory, Int(pointer) + Int(count) <= memory.byteCount else { return false }
        var generator = SystemRandomNumberGenerator()
        memory.withUnsafeMutableBufferPointer(offset: UInt(pointer), count: Int(count)) { buffer in
            for index in buffer.indices { buffer[index] = UInt8.random(in: 0...255, using: &generator) }
        }
        return true
    }
}

/// hubhost_wasm.h's HH_WASM_IMPORT_MODULE, as Swift sees it.
let HH_WASM_IMPORT_MODULE_NAME = "hubhost"
