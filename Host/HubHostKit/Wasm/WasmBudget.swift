@_spi(Fuzzing) import WasmKit

/// What one Wasm plugin instance may spend: fuel per call (about one unit per WebAssembly
/// operator executed) and the most linear memory it may hold. plugins.yaml sets both per instance
/// (`wasm_fuel`, `wasm_memory_limit`).
package struct WasmBudget: Equatable, Sendable {
    /// Fuel for one call (create, augment, compare...): enough for milliseconds of ordinary work
    /// on this interpreter, and a loop without end stops in well under a second.
    package static let defaultFuelPerCall: UInt64 = 50_000_000
    /// Less would not cover a C module's start-up.
    package static let minimumFuelPerCall: Int64 = 10_000
    /// The linear memory ceiling in MiB.
    package static let defaultMemoryLimitMB = 64
    /// Below this even a small C module (stack and static data) does not instantiate.
    package static let minimumMemoryLimitMB = 1
    package static let maximumMemoryLimitMB = 4096

    package var fuelPerCall: UInt64 = defaultFuelPerCall
    package var memoryLimitMB: Int = defaultMemoryLimitMB
    /// The wall-clock deadline of one call (the instance's `call_timeout`). Fuel bounds what the
    /// guest computes; this bounds the time it spends in the host's imports, where it burns no
    /// fuel: an import called past it ends the call as a timeout, and an HTTP request gets at most
    /// the time left.
    package var callTimeoutSeconds: Double = HostManifest.Instance.defaultCallTimeoutSeconds

    package init(
        fuelPerCall: UInt64 = defaultFuelPerCall, memoryLimitMB: Int = defaultMemoryLimitMB,
        callTimeoutSeconds: Double = HostManifest.Instance.defaultCallTimeoutSeconds
    ) {
        self.fuelPerCall = fuelPerCall
        self.memoryLimitMB = memoryLimitMB
        self.callTimeoutSeconds = callTimeoutSeconds
    }

    var memoryLimitBytes: Int { memoryLimitMB << 20 }
}

/// Refuses linear memory beyond the instance's ceiling: `memory.grow` answers -1 in the guest
/// (malloc returns NULL there) and the host goes on. WasmKit exposes its limiter as SPI only.
final class WasmMemoryCeiling: ResourceLimiter {
    let bytes: Int

    init(bytes: Int) { self.bytes = bytes }

    func limitMemoryGrowth(to desired: Int) throws -> Bool { desired <= bytes }

    /// Tables hold function references: a module that grows one past a million entries is broken.
    func limitTableGrowth(to desired: Int) throws -> Bool { desired <= 1_000_000 }
}
