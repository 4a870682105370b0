import Foundation
import HubHostABI
import Logging
import Synchronization

/// One plugins.yaml instance of a `.wasm` plugin: its own instantiation of the module (its own
/// memory: instances never share state), the plugins it created, and the calls the kind adapters
/// send it in the isolation protocol's encoding (IsolatedCalls' host side serves both).
///
/// A call that runs out of fuel, or calls a host import past its wall-clock deadline
/// (`call_timeout`), is a timeout, and one that traps a plugin error; neither reaches the
/// host. Either may leave the guest's state half changed, so the instantiation is dropped and the
/// next call makes a new one from the module and creates the plugins again (`reinstantiations`).
/// Calls are serialized: a WasmKit store runs one call at a time.
/// Sendable: the guest (a WasmKit store, not Sendable itself) and what changes with it live in the
/// `guest` Mutex, which every call holds; the rest are `let`s of Sendable types.
package final class WasmPluginInstance: Sendable {
    package let instanceID: String
    package let file: WasmModuleFile
    package let budget: WasmBudget
    /// The library's ABI version, as its hubhost_library_entry says.
    package let abiVersion: ABIVersion
    /// The plugins created, in the manifest's order: id, kind and index in the library.
    package let plugins: [(id: String, kind: PluginKind, libraryIndex: Int)]
    /// How many times a trap or a timeout made the host instantiate the module again.
    package var reinstantiations: Int { guest.withLock { $0.reinstantiations } }

    /// The fuel its calls used so far and its linear memory after the last one, published after
    /// each call for /metrics, which reads them without waiting for a call in flight.
    private let usage = Mutex<(fuel: UInt64, memoryBytes: Int)>((0, 0))
    /// Fuel its calls have used since it was created (about one unit per instruction).
    package var fuelConsumed: UInt64 { usage.withLock { $0.fuel } }
    /// The linear memory its guest held after its last call, in bytes.
    package var memoryBytes: Int { usage.withLock { $0.memoryBytes } }

    private let services: WasmHostImports
    private let logger: Logger
    private struct Guest {
        /// nil after a call left it unusable: the next call instantiates the module again.
        var current: WasmGuest?
        var reinstantiations = 0
        /// Failed calls are logged one line at a time, at most every 10 s.
        var failureLog = LogRateLimit()
        /// Which plugins (by index in `plugins`) were destroyed: read on every call, so an array.
        var destroyed: [Bool]
    }
    private let guest: Mutex<Guest>

    /// Instantiates `file`, reads its descriptors, checks them against `manifest` and creates every
    /// plugin the manifest exports. Throws PluginLoadError as a `.so` would.
    package convenience init(
        file: WasmModuleFile, manifest: PluginManifest, instanceID: String, config: [String: PluginValue], pipeline: LogPipeline,
        budget: WasmBudget, http: HostEnvironment.HTTPPolicy = .init()
    ) throws {
        try self.init(file: file, instanceID: instanceID, config: config, pipeline: pipeline, budget: budget, http: http) { described in
            let problems = PluginLibrary.disagreements(
                abiVersion: described.abi, exported: described.plugins.map { ($0.id, $0.kind, $0.version) }, with: manifest)
            guard problems.isEmpty else {
                throw PluginLoadError.manifestMismatch(path: file.path, reason: problems.joined(separator: "; "))
            }
            return manifest.exports.map(\.id)
        }
    }

    /// Instantiates `file` and creates only the plugins `ids` names (in that order), with no
    /// manifest to agree with: for testing one plugin at a time (`hubhost plugins test`, PluginTestKit).
    package convenience init(
        file: WasmModuleFile, creating ids: [String], instanceID: String, config: [String: PluginValue], pipeline: LogPipeline,
        budget: WasmBudget = WasmBudget(), http: HostEnvironment.HTTPPolicy = .init()
    ) throws {
        try self.init(file: file, instanceID: instanceID, config: config, pipeline: pipeline, budget: budget, http: http) { described in
            for id in ids where !described.plugins.contains(where: { $0.id == id }) {
                throw PluginLoadError.manifestMismatch(path: file.path, reason: "the module exports no plugin '\(id)'")
            }
            return ids
        }
    }

    /// Instantiates `file`, reads its descriptors, and creates the plugins `select` picks from them.
    private init(
        file: WasmModuleFile, instanceID: String, config: [String: PluginValue], pipeline: LogPipeline, budget: WasmBudget,
        http: HostEnvironment.HTTPPolicy, select: (Description) throws -> [String]
    ) throws {
        self.instanceID = instanceID
        self.file = file
        self.budget = budget
        services = WasmHostImports(instanceID: instanceID, config: config, pipeline: pipeline, http: http)
        logger = Logger(label: "hubhost.wasm", pipeline: pipeline)
        if let version = file.abiVersion, version.major != ABIVersion.host.major {
            throw PluginLoadError.abiMismatch(path: file.path, plugin: version, host: .host)
        }
        let guest = try WasmGuest(file: file, imports: services, budget: budget)
        let described = try Self.describe(guest, path: file.path)
        abiVersion = described.abi
        let plugins = try select(described).map { id in
            let index = described.plugins.firstIndex { $0.id == id }!
            return (id: id, kind: described.plugins[index].kind, libraryIndex: index)
        }
        self.plugins = plugins
        try Self.createAll(plugins, in: guest, instanceID: instanceID, services: services)
        self.guest = Mutex(Guest(current: guest, destroyed: Array(repeating: false, count: plugins.count)))
    }

    /// What a module's library says about itself (hh_wasm_describe), for `plugins inspect`.
    package struct Description: Sendable {
        package struct Plugin: Sendable {
            package var id: String
            package var name: String
            package var description: String
            package var kind: PluginKind
            package var version: String
        }
        package var abi: ABIVersion
        package var plugins: [Plugin]
    }

    /// Instantiates `file` (under `budget`, creating nothing) and reads its descriptors: the only
    /// guest code that runs is the module's start-up and hh_wasm_describe, which reads static tables.
    package static func describe(_ file: WasmModuleFile, budget: WasmBudget = WasmBudget()) throws -> Description {
        if let version = file.abiVersion, version.major != ABIVersion.host.major {
            throw PluginLoadError.abiMismatch(path: file.path, plugin: version, host: .host)
        }
        let services = WasmHostImports(instanceID: "inspect", config: [:], pipeline: LogPipeline(filter: LogFilter(severity: .none)))
        return try describe(try WasmGuest(file: file, imports: services, budget: budget), path: file.path)
    }

    /// The ABI version and descriptors hh_wasm_describe answers, checked as PluginLibrary checks a `.so`.
    private static func describe(_ guest: WasmGuest, path: String) throws -> Description {
        func fail(_ index: Int, _ reason: String) -> PluginLoadError { .invalidDescriptor(path: path, index: index, reason: reason) }
        let bytes: [UInt8]
        do {
            bytes = try guest.describe()
        } catch {
            throw PluginLoadError.notAWasmPlugin(path: path, reason: "hh_wasm_describe failed: \(error)")
        }
        var reader = WireReader(bytes)
        do {
            let abi = ABIVersion(major: try reader.u32(), minor: try reader.u32(), patch: try reader.u32())
            guard abi.major == ABIVersion.host.major else { throw PluginLoadError.abiMismatch(path: path, plugin: abi, host: .host) }
            let count = Int(try reader.u32())
            guard count >= 1, count <= 4096 else { throw fail(0, "plugin_count is \(count); expected 1 to 4096") }
            var plugins: [Description.Plugin] = []
            for index in 0..<count {
                let id = try reader.string()
                let name = try reader.string()
                let description = try reader.string()
                let version = try reader.string()
                let code = try reader.i32()
                guard PluginManifest.isValidID(id) else {
                    throw fail(index, "id is missing or not made of lowercase letters, digits, '-', '_' and '.'")
                }
                guard let kind = PluginKind(code: code) else { throw fail(index, "'\(id)' has unknown kind code \(code), or lacks its tables") }
                guard abi.minor >= kind.introducedInMinor else {
                    throw fail(
                        index,
                        "'\(id)' is a \(kind.rawValue) plugin, a kind added in ABI 1.\(kind.introducedInMinor), but the library says ABI \(abi)")
                }
                guard !plugins.contains(where: { $0.id == id }) else { throw fail(0, "plugin id '\(id)' is exported twice") }
                plugins.append(Description.Plugin(id: id, name: name.isEmpty ? id : name, description: description, kind: kind, version: version))
            }
            return Description(abi: abi, plugins: plugins)
        } catch let error as PluginLoadError {
            throw error
        } catch {
            throw PluginLoadError.notAWasmPlugin(path: path, reason: "hh_wasm_describe answered badly: \(error)")
        }
    }

    /// Creates every plugin in `guest`; on a failure destroys the ones created and throws.
    private static func createAll(
        _ plugins: [(id: String, kind: PluginKind, libraryIndex: Int)], in guest: WasmGuest, instanceID: String, services: WasmHostImports
    ) throws {
        var created: [Int] = []
        for plugin in plugins {
            let status: Int32
            do {
                status = try guest.create(plugin.libraryIndex)
            } catch {
                throw PluginLoadError.createFailed(instance: instanceID, plugin: plugin.id, status: HH_ERR_INTERNAL, message: "\(error)")
            }
            guard status == 0 else {
                for index in created.reversed() { try? guest.destroy(index) }
                throw PluginLoadError.createFailed(instance: instanceID, plugin: plugin.id, status: status, message: services.takeError())
            }
            created.append(plugin.libraryIndex)
        }
    }

    /// One call on the plugin at `index` (in `plugins`), encoded as for a worker process.
    func call(_ index: Int, _ op: WorkerOp, _ arguments: (inout WireWriter) -> Void) -> Result<WireReader, WorkerFailure> {
        var request = WireWriter()
        arguments(&request)
        return self.guest.withLock { state -> Result<WireReader, WorkerFailure> in
            guard index < state.destroyed.count, !state.destroyed[index] else { return .failure(.crashed("the plugin was destroyed")) }
            // One deadline for the whole call: instantiating again, the request buffer and the
            // call itself together get `call_timeout`, not one each.
            services.deadlineNs = Clock.monotonicNs() &+ SafeTime.durationNs(budget.callTimeoutSeconds)
            defer { services.deadlineNs = .max }
            let guest: WasmGuest
            if let current = state.current {
                guest = current
            } else {
                do {
                    // The last call left the guest unusable: a new one from the module, plugins created again.
                    let fresh = try WasmGuest(file: file, imports: services, budget: budget)
                    _ = try fresh.describe()  // the adapter learns its descriptors here, before any create
                    try Self.createAll(plugins, in: fresh, instanceID: instanceID, services: services)
                    state.current = fresh
                    state.reinstantiations += 1
                    guest = fresh
                } catch {
                    return .failure(.crashed("could not instantiate the module again: \(error)"))
                }
            }
            defer {
                let (used, bytes) = (guest.fuelUsed, guest.memory.byteCount)
                usage.withLock { $0 = ($0.fuel &+ used, bytes) }
            }
            do {
                guard let answer = try guest.call(plugins[index].libraryIndex, op: op.rawValue, request: request.bytes) else {
                    return .failure(.crashed("the plugin does not answer \(op) (not its kind, or a request its adapter could not read)"))
                }
                return .success(WireReader(answer))
            } catch let error as WasmCallFailure {
                state.current = nil
                let (write, leftOut) = state.failureLog.admit()
                if write {
                    logger.warning(
                        "instance '\(instanceID)' (\(plugins[index].id)) \(error) during \(op); the module is instantiated again for the next call\(leftOut > 0 ? " (\(leftOut) more failed calls in the last \(state.failureLog.intervalNs / 1_000_000_000) s not logged)" : "")"
                    )
                }
                switch error {
                case .outOfFuel, .deadlinePassed: return .failure(.timedOut(error.description))
                case .trapped, .badAnswer: break
                }
                return .failure(.crashed(error.description))
            } catch {
                state.current = nil
                return .failure(.crashed("\(error)"))
            }
        }
    }

    /// Destroys the plugin at `index` (in `plugins`) once.
    package func destroy(_ index: Int) {
        guest.withLock { state in
            guard index < state.destroyed.count, !state.destroyed[index] else { return }
            state.destroyed[index] = true
            guard let guest = state.current else { return }
            try? guest.destroy(plugins[index].libraryIndex)
        }
    }
}
