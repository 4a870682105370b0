import Foundation
import Metrics
import Synchronization

/// What each plugin instance holds and spends, read when /metrics is asked: the resident memory of
/// an isolated instance's worker process (from /proc), and a `.wasm` instance's linear memory and
/// the fuel its calls used. Nothing here waits for a call in flight.
enum PluginResourceMetrics {
    /// The fuel each `.wasm` instance had used at the last report, to count on from there.
    private static let fuelReported = Mutex<[String: UInt64]>([:])

    static let help: [String: String] = [
        "hubhost_worker_resident_memory_bytes": "Resident memory of an isolated plugin instance's worker process, in bytes, by instance.",
        "hubhost_wasm_memory_bytes": "Linear memory a .wasm plugin instance holds, in bytes, by instance.",
        "hubhost_wasm_fuel_consumed_total": "Fuel (about one unit per WebAssembly instruction) a .wasm plugin instance's calls used, by instance."
    ]

    static func record(_ entries: [PluginRegistry.Entry]) {
        var wasmFuel: [String: UInt64] = [:]
        for entry in entries {
            if let worker = entry.worker {
                var bytes = 0
                if case .running(let pid) = worker.currentState { bytes = residentBytes(pid: pid) ?? 0 }
                Gauge(label: "hubhost_worker_resident_memory_bytes", dimensions: [("instance", entry.id)]).record(bytes)
            }
            guard case .wasm(let guest, _)? = entry.plugins.first?.backend else { continue }
            Gauge(label: "hubhost_wasm_memory_bytes", dimensions: [("instance", entry.id)]).record(guest.memoryBytes)
            wasmFuel[entry.id] = guest.fuelConsumed
        }
        let deltas = fuelReported.withLock { reported in
            var deltas: [(String, UInt64)] = []
            for (instance, fuel) in wasmFuel {
                // A reload's new instance starts from 0 again: count what it used since.
                let before = reported[instance] ?? 0
                deltas.append((instance, fuel >= before ? fuel - before : fuel))
            }
            reported = wasmFuel
            return deltas
        }
        for (instance, delta) in deltas {
            Counter(label: "hubhost_wasm_fuel_consumed_total", dimensions: [("instance", instance)])
                .increment(by: Int64(clamping: delta))
        }
    }

    /// The resident set of process `pid` in bytes (/proc/<pid>/statm's second field, in pages);
    /// nil when it cannot be read (the process is gone).
    static func residentBytes(pid: Int32) -> Int? {
        guard pid > 0, let text = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count >= 2, let pages = Int(fields[1]), pages >= 0, pages < Int.max / 65_536 else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
