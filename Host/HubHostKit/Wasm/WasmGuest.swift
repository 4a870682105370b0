import Foundation
@_spi(Fuzzing) import WasmKit

/// Why a call into a guest did not answer.
enum WasmCallFailure: Error, CustomStringConvertible {
    /// The call used up its fuel: the plugin ran too long (a timeout).
    case outOfFuel(UInt64)
    /// The call called a host import past its wall-clock deadline (a timeout).
    case deadlinePassed(Double)
    /// The guest trapped (unreachable, out-of-bounds access, stack exhausted, a refused import...).
    case trapped(String)
    /// The guest answered something the host cannot read (an answer outside its memory).
    case badAnswer(String)

    var description: String {
        switch self {
        case .outOfFuel(let fuel): return "ran out of fuel (\(fuel) per call): the call took too long"
        case .deadlinePassed(let seconds):
            return "passed its \(EngageDuration.format(seconds)) call deadline (call_timeout) in the host's imports: the call took too long"
        case .trapped(let why): return "trapped: \(why)"
        case .badAnswer(let why): return "answered badly: \(why)"
        }
    }
}

/// One instantiation of a plugin module: its store (with the fuel and the memory ceiling), its
/// memory, and the hh_wasm_* exports with their signatures checked. Not thread-safe: the
/// WasmPluginInstance that owns it makes one call at a time.
final class WasmGuest {
    /// One engine for every guest: fuel metering is decided when code is translated. Bounds are
    /// checked in software: the mprotect guard WasmKit would otherwise use saves and restores the
    /// signal mask around every call (a sigsetjmp), about 0.3 µs of a 2 µs call, while the checks
    /// it spares cost the regex benchmark under 2% (docs/performance-log.md).
    static let engine = Engine(configuration: EngineConfiguration(memoryBoundsChecking: .software, fuelMetering: true))

    let store: Store
    let memory: Memory
    let budget: WasmBudget
    /// The host's imports, which end a call past its deadline (`WasmHostImports.deadlineNs`).
    private let services: WasmHostImports
    private let bufferFunction: Function
    private let describeFunction: Function
    private let createFunction: Function
    private let destroyFunction: Function
    private let callFunction: Function
    /// One execution stack for every call: `Function.invoke` without one allocates (and frees) a
    /// fresh half-megabyte stack per call, most of a small call's cost.
    private var stack: ExecutionStack
    /// The guest's request buffer as last handed out (hh_wasm_buffer), reused while large enough.
    private var requestPointer: UInt32 = 0
    private var requestCapacity = 0

    /// The exports the host calls and their signatures (hubhost_wasm.h).
    static let requiredExports: [(name: String, parameters: [ValueType], results: [ValueType])] = [
        ("hh_wasm_buffer", [.i32], [.i32]),
        ("hh_wasm_describe", [], [.i64]),
        ("hh_wasm_create", [.i32], [.i32]),
        ("hh_wasm_destroy", [.i32], []),
        ("hh_wasm_call", [.i32, .i32, .i32], [.i64])
    ]

    /// Instantiates `file` with `imports` and runs its `_initialize` (a reactor's constructors).
    init(file: WasmModuleFile, imports services: WasmHostImports, budget: WasmBudget) throws {
        self.budget = budget
        self.services = services
        stack = ExecutionStack(engine: Self.engine)
        store = Store(engine: Self.engine)
        store.resourceLimiter = WasmMemoryCeiling(bytes: budget.memoryLimitBytes)
        let instance: Instance
        do {
            let imports = try services.imports(for: file, store: store)
            store.fuel = Fuel(remaining: budget.fuelPerCall)  // a start function runs here
            instance = try file.module.instantiate(store: store, imports: imports)
        } catch let error as PluginLoadError {
            throw error
        } catch {
            throw PluginLoadError.notAWasmPlugin(path: file.path, reason: "it does not instantiate: \(error)")
        }
        guard let memory = instance.exports[memory: "memory"] else {
            throw PluginLoadError.notAWasmPlugin(path: file.path, reason: "it exports no memory named 'memory'")
        }
        self.memory = memory
        services.memory = memory
        var functions: [Function] = []
        for wanted in Self.requiredExports {
            guard let function = instance.exports[function: wanted.name] else {
                throw PluginLoadError.notAWasmPlugin(
                    path: file.path, reason: "it does not export \(wanted.name); build it with the guest adapter (scripts/build-wasm-plugin)")
            }
            let expected = FunctionType(parameters: wanted.parameters, results: wanted.results)
            guard function.type == expected else {
                throw PluginLoadError.notAWasmPlugin(
                    path: file.path, reason: "it exports \(wanted.name) as \(function.type), not \(expected)")
            }
            functions.append(function)
        }
        (bufferFunction, describeFunction, createFunction, destroyFunction, callFunction) =
            (functions[0], functions[1], functions[2], functions[3], functions[4])
        if let initialize = instance.exports[function: "_initialize"] {
            guard initialize.type == FunctionType(parameters: [], results: []) else {
                throw PluginLoadError.notAWasmPlugin(path: file.path, reason: "it exports _initialize as \(initialize.type)")
            }
            do {
                _ = try invoke(initialize, [])
            } catch {
                throw PluginLoadError.notAWasmPlugin(path: file.path, reason: "_initialize failed: \(error)")
            }
        }
    }

    /// The fuel the last call used (its budget less what remained; a call that ran out used it all).
    var fuelUsed: UInt64 {
        let remaining = store.fuel?.remaining ?? 0
        return budget.fuelPerCall >= remaining ? budget.fuelPerCall - remaining : 0
    }

    /// Calls `function` with a fresh fuel budget; a trap becomes a WasmCallFailure. The wall-clock
    /// deadline is `call_timeout` from now, unless a caller set one already for a call made of
    /// several invocations (`WasmPluginInstance.call`): then that one holds, so the parts of one
    /// call share one deadline instead of each getting a whole one.
    private func invoke(_ function: Function, _ arguments: [Value]) throws(WasmCallFailure) -> [Value] {
        store.fuel = Fuel(remaining: budget.fuelPerCall)
        let outermost = services.deadlineNs == .max
        if outermost { services.deadlineNs = Clock.monotonicNs() &+ SafeTime.durationNs(budget.callTimeoutSeconds) }
        defer { if outermost { services.deadlineNs = .max } }
        do {
            return try function.invoke(arguments, on: &stack)
        } catch is WasmHostImports.DeadlinePassed {
            throw .deadlinePassed(budget.callTimeoutSeconds)
        } catch let trap as Trap {
            // WasmKit names the reason only in the description (TrapReason is not public).
            if trap.description.contains("out of fuel") { throw .outOfFuel(budget.fuelPerCall) }
            // The reason only: the description goes on with the guest's backtrace (about 100 KB for
            // a deep recursion), which would be logged and answered with every failed call.
            let reason = trap.description.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? "a trap"
            throw .trapped(Suggestion.clip(reason.replacingOccurrences(of: "Trap: ", with: ""), to: 256))
        } catch let error as PluginCallError {
            throw .trapped("\(error)")
        } catch {
            throw .trapped("\(error)")
        }
    }

    /// The bytes of an answer (low 32 bits a pointer, high 32 bits a length), copied out.
    private func answer(_ value: Value) throws(WasmCallFailure) -> [UInt8]? {
        let raw = value.i64
        if Int64(bitPattern: raw) == -1 { return nil }
        let pointer = Int(raw & 0xffff_ffff)
        let length = Int(raw >> 32)
        guard pointer + length <= memory.byteCount else {
            throw .badAnswer("an answer of \(length) bytes at \(pointer), outside its \(memory.byteCount) bytes of memory")
        }
        return memory.withUnsafeBufferPointer(offset: UInt(pointer), count: length) { [UInt8]($0) }
    }

    /// The library's ABI version and descriptors (hh_wasm_describe).
    func describe() throws(WasmCallFailure) -> [UInt8] {
        guard let bytes = try answer(try invoke(describeFunction, [])[0]) else { throw .badAnswer("hh_wasm_describe answered -1") }
        return bytes
    }

    /// Creates plugin `index`: its status.
    func create(_ index: Int) throws(WasmCallFailure) -> Int32 {
        Int32(bitPattern: try invoke(createFunction, [.i32(UInt32(index))])[0].i32)
    }

    func destroy(_ index: Int) throws(WasmCallFailure) {
        _ = try invoke(destroyFunction, [.i32(UInt32(index))])
    }

    /// One call: the request copied into the guest's buffer, the answer copied out; nil when the
    /// adapter refuses the request (an operation the plugin's kind does not have).
    func call(_ index: Int, op: UInt8, request: [UInt8]) throws(WasmCallFailure) -> [UInt8]? {
        if request.count > requestCapacity || requestPointer == 0 {
            let capacity = max(request.count, 256)
            let pointer = try invoke(bufferFunction, [.i32(UInt32(capacity))])[0].i32
            guard pointer != 0 else { throw .badAnswer("no memory for a request of \(request.count) bytes") }
            guard Int(pointer) + capacity <= memory.byteCount else { throw .badAnswer("a request buffer outside its memory") }
            requestPointer = pointer
            requestCapacity = capacity
        }
        if !request.isEmpty {
            memory.withUnsafeMutableBufferPointer(offset: UInt(requestPointer), count: request.count) { $0.copyBytes(from: request) }
        }
        return try answer(try invoke(callFunction, [.i32(UInt32(index)), .i32(UInt32(op)), .i32(UInt32(request.count))])[0])
    }
}
