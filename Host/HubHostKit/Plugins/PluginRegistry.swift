import Foundation
import Logging
import Synchronization

/// The plugin instances of one host, loaded in plugins.yaml order. A bad instance (manifest
/// problem, missing or foreign library, ABI mismatch, failing create...) is recorded with its
/// reason and skipped; the others load regardless. `reload` applies a new plugins.yaml: instances
/// added, removed or changed are loaded or retired, unchanged ones are kept as they are.
/// Sendable: the entries, the generation and the manifest live in a Mutex; every other field is a
/// `let` of a Sendable type (the location service and token cache lock their own state).
public final class PluginRegistry: Sendable {
    /// What became of a configured instance.
    public enum State: Equatable, Sendable {
        /// Every plugin the instance's library exports was created; they serve calls.
        case loaded
        /// It did not load, or its worker was given up after repeated crashes; the error says why.
        case failed(PluginLoadError)
        /// `enabled: false` in plugins.yaml: kept as an entry, not loaded.
        case disabled

        /// "loaded", "failed" or "disabled", as `hubhost plugins list` shows it.
        public var name: String {
            switch self {
            case .loaded: return "loaded"
            case .failed: return "failed"
            case .disabled: return "disabled"
            }
        }
    }

    /// One configured instance and what became of it.
    public struct Entry: Sendable {
        /// The instance as plugins.yaml declares it.
        public let configuration: HostManifest.Instance
        /// What loading it came to: loaded, failed (with why) or disabled (`enabled: false`).
        public var loadState: State
        /// What it is now: `loadState`, except that an isolated instance whose worker was given up
        /// after repeated crashes is failed (`workerGivenUp`), as every surface shows it.
        public var state: State {
            if loadState == .loaded, let worker, case .gaveUp(let crashes, let cause) = worker.currentState {
                return .failed(.workerGivenUp(instance: configuration.id, crashes: crashes, cause: cause))
            }
            return loadState
        }
        /// The library file it resolved to, when it got that far.
        public var libraryPath: String?
        /// The ABI version the binary reported, when it got that far.
        public var binaryABI: ABIVersion?
        /// One per exported plugin, when loaded.
        public var plugins: [PluginHandle]
        /// The worker process, for an instance with `isolation: process`.
        package var worker: PluginWorker?
        /// The reload that loaded it (0: at start).
        public var generation = 0
        /// SHA-256 (hex) of its library file as loaded, when it got that far.
        public var libraryHash: String?

        /// The instance id from plugins.yaml.
        public var id: String { configuration.id }
        /// Where its calls run, as `plugins list` and `GET /v1/plugins` show it: `in_process`,
        /// `process`, or `wasm` for a .wasm library (it runs in WasmKit whatever `isolation:` says).
        public var runsIn: String { libraryPath?.hasSuffix(".wasm") == true ? "wasm" : configuration.isolation.rawValue }
    }

    /// Every configured instance in plugins.yaml order, whatever became of it (after `loadAll`).
    public var entries: [Entry] { state.withLock { $0.current } }
    /// How many reloads were applied (0 until the first).
    public var generation: Int { state.withLock { $0.generation } }
    private struct Shared {
        var current: [Entry] = []
        var generation = 0
        var manifest: HostManifest
    }
    private let state: Mutex<Shared>
    /// The location service plugins reach through "hubhost.location.v1" (the location delegates).
    public let locationService = LocationService()
    /// The OAuth token event sinks reach through "hubhost.event_auth.v1", when `events.auth_token_url` is set.
    package let eventAuth: EventAuthTokens?
    private let pipeline: LogPipeline
    private let locator: LibraryLocator
    private let logger: Logger
    private let workerExecutable: String?

    /// `workerExecutable` is the hubhost executable that runs `hubhost worker` for instances with
    /// `isolation: process` (default: the running hubhost, or a `hubhost` beside the running program).
    public init(
        manifest: HostManifest, pipeline: LogPipeline, locator: LibraryLocator = LibraryLocator(),
        workerExecutable: String? = nil
    ) {
        state = Mutex(Shared(manifest: manifest))
        self.pipeline = pipeline
        self.locator = locator
        self.workerExecutable = workerExecutable ?? Self.defaultWorkerExecutable()
        let tokens = EventAuthTokens(settings: manifest.events, http: HTTPFetcher())
        eventAuth = tokens.isConfigured ? tokens : nil
        self.logger = Logger(label: "hubhost.loader", pipeline: pipeline)
    }

    /// Loads every instance in order. Call once.
    public func loadAll() {
        for configuration in state.withLock({ $0.manifest.instances }) {
            let entry = loadEntry(configuration, generation: 0)
            state.withLock { $0.current.append(entry) }
            // Location delegates serve the plugins loaded after them (the location augmentation).
            if entry.plugins.contains(where: { $0.kind == .location }) {
                locationService.use(plugins(of: .location).map(LocationPlugin.init))
            }
        }
    }

    /// Loads one instance; a failure is recorded in the entry, never thrown.
    /// `trial`: a new library content meant to run in process is first loaded and created in a
    /// worker (`tryInWorker`), so that a library or create that crashes costs a refused reload.
    private func loadEntry(_ configuration: HostManifest.Instance, generation: Int, trial: Bool = false) -> Entry {
        var entry = Entry(configuration: configuration, loadState: .disabled, libraryPath: nil, binaryABI: nil, plugins: [], worker: nil)
        entry.generation = generation
        do {
            try load(configuration, into: &entry, trial: trial)
            entry.loadState = .loaded
            for handle in entry.plugins { handle.ejection.configure(configuration.ejection, logger: logger) }
            logger.info(
                "instance '\(configuration.id)' loaded\(entry.worker.map { " in a worker process, \($0.stateDescription)" } ?? ""): \(entry.plugins.map { "\($0.pluginID) (\($0.kind.rawValue))" }.joined(separator: ", "))"
            )
        } catch let error as PluginLoadError {
            entry.loadState = error == .disabled ? .disabled : .failed(error)
            // Refused for its ABI version: the version is the binary's, whatever plugin.yaml claims.
            if case .abiMismatch(_, let binary, _) = error { entry.binaryABI = binary }
            if error != .disabled { logger.error("instance '\(configuration.id)' not loaded: \(error)") }
        } catch {
            entry.loadState = .failed(.manifestMismatch(path: configuration.use, reason: "\(error)"))
        }
        return entry
    }

    private func load(_ configuration: HostManifest.Instance, into entry: inout Entry, trial: Bool = false) throws {
        guard configuration.problems.isEmpty else { throw PluginLoadError.manifestProblems(configuration.problems) }
        guard configuration.enabled else { throw PluginLoadError.disabled }
        guard let plugin = configuration.plugin else {
            throw PluginLoadError.manifestProblems([])
        }
        let manifest = state.withLock { $0.manifest }
        let path = try locator.locate(library: plugin.library, manifestFolder: plugin.folder).get()
        entry.libraryPath = path
        if path.hasSuffix(".wasm") {
            // A WebAssembly module: its own instantiation per instance, run by the interpreter in
            // this process under its fuel and memory budget (isolation does not apply). The bytes
            // hashed are the bytes parsed.
            let bytes = try LibraryFile.read(path: path)
            let hash = SHA256.hex(of: Data(bytes))
            entry.libraryHash = hash
            if let pin = configuration.sha256, pin != hash { throw PluginLoadError.sha256Mismatch(path: path, expected: pin, actual: hash) }
            var budget = configuration.wasm
            budget.callTimeoutSeconds = configuration.callTimeoutSeconds
            let wasm = try WasmPluginInstance(
                file: try WasmModuleFile.parse(bytes, path: path), manifest: plugin, instanceID: configuration.id,
                config: configuration.config, pipeline: pipeline, budget: budget, http: configuration.http)
            entry.binaryABI = wasm.abiVersion
            entry.plugins = wasm.plugins.indices.map { PluginHandle(wasm: wasm, index: $0) }
            return
        }
        // Read once and checked (a whole ELF shared object, the pin): in process or in a worker,
        // at start and at every restart, this content is what is loaded, whatever the path holds later.
        let image: LibraryImage
        do {
            image = try LibraryImage.read(path: path, pin: configuration.sha256)
        } catch PluginLoadError.sha256Mismatch(let path, let expected, let actual) {
            entry.libraryHash = actual
            throw PluginLoadError.sha256Mismatch(path: path, expected: expected, actual: actual)
        }
        entry.libraryHash = image.sha256
        func workerSettings(_ executable: String) -> PluginWorker.Settings {
            var settings = PluginWorker.Settings(
                instanceID: configuration.id, manifestPath: plugin.file, library: image,
                dataDirectory: manifest.dataDirectory, config: configuration.config,
                logFilter: manifest.logging, executable: executable)
            settings.callTimeoutMs = Int((configuration.callTimeoutSeconds * 1000).rounded(.up))
            settings.memoryLimitMB = configuration.memoryLimitMB
            settings.http = configuration.http
            settings.environment = configuration.environment
            return settings
        }
        if configuration.isolation == .process {
            // The library is opened only in the worker: a library that crashes as it loads must not
            // take hubhost down.
            guard let executable = workerExecutable else {
                throw PluginLoadError.workerFailed(instance: configuration.id, reason: "no hubhost executable found to run the worker")
            }
            let worker = PluginWorker(settings: workerSettings(executable), pipeline: pipeline)
            entry.worker = worker
            let exports = try worker.start()
            entry.binaryABI = worker.libraryABI
            entry.plugins = exports.enumerated().map {
                PluginHandle(worker: worker, index: $0.offset, pluginID: $0.element.id, kind: $0.element.kind)
            }
            return
        }
        if trial, let executable = workerExecutable, !PluginLibrary.isOpen(image) {
            // A content this process has not run yet, arriving in a running host: its init and
            // create run first in a worker, where a crash fails this instance, not the server.
            let worker = PluginWorker(settings: workerSettings(executable), pipeline: pipeline)
            defer { worker.stop() }
            do {
                _ = try worker.start()
            } catch PluginLoadError.workerFailed(_, let reason) {
                throw PluginLoadError.trialFailed(instance: configuration.id, reason: reason)
            }
        }
        let library = try PluginLibrary.open(image)
        entry.binaryABI = library.abiVersion
        let disagreements = library.disagreements(with: plugin)
        guard disagreements.isEmpty else {
            throw PluginLoadError.manifestMismatch(path: path, reason: disagreements.joined(separator: "; "))
        }
        var created: [PluginInstance] = []
        for export in plugin.exports {
            let descriptor = library.descriptors.first { $0.id == export.id }!
            do {
                created.append(
                    try PluginInstance.create(
                        descriptor, of: library, instanceID: configuration.id,
                        config: configuration.config, dataDirectory: manifest.dataDirectory,
                        pipeline: pipeline,
                        environment: HostEnvironment(
                            http: configuration.http, location: locationService,
                            eventAuth: eventAuth), deadlineSeconds: configuration.createTimeoutSeconds))
            } catch {
                // All of an instance's plugins load, or none: undo the ones already created.
                for instance in created.reversed() { instance.destroy() }
                throw error
            }
        }
        entry.plugins = created.map(PluginHandle.init)
    }

    /// Loads and creates `instance` as a reload would (a new in-process library is tried in a
    /// worker first), then retires it: what `hubhost plugins add` and `upgrade` check when no serve
    /// runs. Returns why it does not load, or nil. Blocking: call it from a thread that may wait.
    public func trial(_ instance: HostManifest.Instance) -> PluginLoadError? {
        let entry = loadEntry(instance, generation: 0, trial: true)
        retire([entry], waitSeconds: 0, grace: 0)
        if case .failed(let error) = entry.state { return error }
        return nil
    }

    /// Distinct library contents this process has dlopened (each stays mapped for the process's life).
    public var loadedLibraryCount: Int { PluginLibrary.openedCount }

    /// What a reload did to the instances.
    public struct Change: Sendable {
        /// Instance ids, in plugins.yaml order.
        public var added: [String] = []
        /// Ids of the instances the new manifest no longer names, in the old plugins.yaml's order.
        public var removed: [String] = []
        /// Ids of the instances whose entry or library file's content changed, in plugins.yaml order.
        public var changed: [String] = []
        /// Ids of the instances kept as they are, running untouched, in plugins.yaml order.
        public var unchanged: [String] = []
        /// The entries taken out: retire them (`retire`) once nothing uses them.
        public var retired: [Entry] = []
        /// The generation after the reload.
        public var generation = 0
        /// Why the reload was refused and nothing changed: each instance it would have added, or
        /// changed from a working one, that does not load (its new library is cut short, not a
        /// shared object, fails its pin or its create...). Empty when it was applied.
        public var problems: [String] = []
    }

    /// The instances `manifest` would add, remove or change, without loading anything. An instance
    /// is changed when its entry in plugins.yaml differs (use, config, enabled, isolation, limits,
    /// http policy, pin) or its library file's content does.
    public func plan(_ manifest: HostManifest) -> Change {
        let old = entries
        var change = Change()
        for instance in manifest.instances {
            guard let entry = old.first(where: { $0.id == instance.id }) else {
                change.added.append(instance.id)
                continue
            }
            if Self.sameSettings(entry.configuration, instance) && libraryUnchanged(entry, instance) {
                change.unchanged.append(instance.id)
            } else {
                change.changed.append(instance.id)
            }
        }
        change.removed = old.map(\.id).filter { id in !manifest.instances.contains { $0.id == id } }
        return change
    }

    /// Applies `manifest`: loads the added and changed instances first, then swaps the set in one
    /// step (unchanged entries are the same objects), and returns the entries taken out, for
    /// `retire`. An instance that was failing and fails again is recorded as failed, as at start;
    /// but when an added instance, or a changed one that worked, does not load, nothing is
    /// applied: the instances just loaded are retired, the running set keeps serving, and
    /// `problems` says why.
    public func reload(_ manifest: HostManifest) -> Change {
        var change = plan(manifest)
        let old = entries
        let (generation, previousManifest) = state.withLock { ($0.generation + 1, $0.manifest) }
        state.withLock { $0.manifest = manifest }
        var next: [Entry] = []
        var loaded: [Entry] = []
        for instance in manifest.instances {
            if change.unchanged.contains(instance.id), let kept = old.first(where: { $0.id == instance.id }) {
                next.append(kept)
                continue
            }
            let entry = loadEntry(instance, generation: generation, trial: true)
            next.append(entry)
            loaded.append(entry)
            guard case .failed(let error) = entry.state else { continue }
            let previous = old.first { $0.id == instance.id }
            if previous == nil || previous?.state == .loaded || previous?.state == .disabled {
                change.problems.append("plugins: instance '\(instance.id)' does not load: \(error)")
            }
        }
        guard change.problems.isEmpty else {
            state.withLock { $0.manifest = previousManifest }
            retire(loaded, waitSeconds: 0, grace: 0)
            change.retired = []
            change.generation = generation - 1
            return change
        }
        change.retired = old.filter { entry in !change.unchanged.contains(entry.id) }
        state.withLock {
            $0.current = next
            $0.generation = generation
        }
        locationService.use(plugins(of: .location).map(LocationPlugin.init))
        change.generation = generation
        return change
    }

    /// Destroys the plugins of `retired` entries once their calls in flight have returned (each
    /// waited for at most `waitSeconds`, then `grace` more for calls the host does not track), and
    /// stops their workers; on a thread of its own. A plugin still in a call after the wait is left
    /// alive (and logged): destroying it under a running call would be worse than keeping it.
    public func retire(_ retired: [Entry], waitSeconds: Double = 60, grace: Double = 0.5) {
        guard !retired.isEmpty else { return }
        let logger = self.logger
        Thread {
            Thread.sleep(forTimeInterval: grace)
            for entry in retired {
                var leftAlive = false
                for handle in entry.plugins.reversed() {
                    let deadline = Clock.monotonicNs() &+ SafeTime.durationNs(waitSeconds)
                    while handle.calls.callsInFlight > 0 && Clock.monotonicNs() < deadline { usleep(10_000) }
                    if handle.calls.callsInFlight > 0 {
                        leftAlive = true
                        logger.warning("instance '\(entry.id)' (\(handle.pluginID)) is still in a call after a reload: left alive, not destroyed")
                    } else {
                        handle.destroy()
                    }
                }
                if !leftAlive { entry.worker?.stop() }
            }
        }.start()
    }

    /// Whether plugins.yaml gives an instance the same settings (everything but its position).
    static func sameSettings(_ a: HostManifest.Instance, _ b: HostManifest.Instance) -> Bool {
        a.id == b.id && a.use == b.use && a.enabled == b.enabled && a.sha256 == b.sha256 && a.config == b.config
            && a.isolation == b.isolation && a.callTimeoutSeconds == b.callTimeoutSeconds && a.memoryLimitMB == b.memoryLimitMB
            && a.wasm == b.wasm && a.http.allowedHosts == b.http.allowedHosts && a.http.timeoutSeconds == b.http.timeoutSeconds
            && a.environment == b.environment && a.ejection == b.ejection && a.problems.isEmpty && b.problems.isEmpty
            && a.plugin?.library == b.plugin?.library
    }

    /// Whether the library file the entry loaded still has the content it had.
    /// A failed instance counts as changed, so a reload tries it again (its library may have been
    /// built or fixed since); a disabled one stays as it is.
    private func libraryUnchanged(_ entry: Entry, _ instance: HostManifest.Instance) -> Bool {
        if case .failed = entry.state { return false }
        guard let path = entry.libraryPath else { return entry.state == .disabled }
        return LibraryFile.sha256(path: path) == entry.libraryHash
    }

    /// The running hubhost, or a `hubhost` beside the running program (tests run from the build folder).
    package static func defaultWorkerExecutable() -> String? {
        let running = LibraryLocator.runningExecutablePath()
        if (running as NSString).lastPathComponent == "hubhost" { return running }
        let beside = ((running as NSString).deletingLastPathComponent as NSString).appendingPathComponent("hubhost")
        return FileManager.default.isExecutableFile(atPath: beside) ? beside : nil
    }

    /// Every loaded plugin of a kind, in plugins.yaml order.
    public func plugins(of kind: PluginKind) -> [PluginHandle] {
        entries.flatMap { $0.state == .loaded ? $0.plugins.filter { $0.kind == kind } : [] }
    }

    /// The entry of instance `id`, or nil.
    public func entry(id: String) -> Entry? { entries.first { $0.id == id } }

    /// Destroys every instance and stops every worker, last loaded first.
    public func shutdown() {
        for entry in entries.reversed() {
            for handle in entry.plugins.reversed() { handle.destroy() }
            entry.worker?.stop()
        }
    }
}
