import Foundation
import Logging

/// The plugin instances of one host, loaded in plugins.yaml order. A bad instance (manifest
/// problem, missing or foreign library, ABI mismatch, failing create...) is recorded with its
/// reason and skipped; the others load regardless. `reload` applies a new plugins.yaml: instances
/// added, removed or changed are loaded or retired, unchanged ones are kept as they are.
/// Safe to share: `current`, `generation`, `manifest` and `loadedLibraryHashes` are read and written under `lock`;
/// every other field is a `let` (the location service and token cache lock their own state).
public final class PluginRegistry: @unchecked Sendable {
    /// What became of a configured instance.
    public enum State: Equatable, Sendable {
        case loaded
        case failed(PluginLoadError)
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
    /// Safe to share: a value type whose fields are all Sendable (strings, enums, the manifest's Sendable Instance, and
    /// handles and a worker that are safe to share on their own).
    public struct Entry: @unchecked Sendable {
        /// The instance as plugins.yaml declares it.
        public let configuration: HostManifest.Instance
        /// Loaded, failed (with why) or disabled (`enabled: false`).
        public var state: State
        /// The library file it resolved to, when it got that far.
        public var libraryPath: String?
        /// The ABI version the binary reported, when it got that far.
        public var binaryABI: ABIVersion?
        /// One per exported plugin, when loaded.
        public var plugins: [PluginHandle]
        /// The worker process, for an instance with `isolation: process`.
        public var worker: PluginWorker?
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
    public var entries: [Entry] { lock.withLock { current } }
    /// How many reloads were applied (0 until the first).
    public var generation: Int { lock.withLock { currentGeneration } }
    private let lock = NSLock()
    private var current: [Entry] = []
    private var currentGeneration = 0
    /// The SHA-256 of the file this process dlopened at each library path: a file replaced at the
    /// same path since is loaded from a copy named by its own hash (dlopen would hand back the old one).
    private var loadedLibraryHashes: [String: String] = [:]
    /// The location service plugins reach through "hubhost.location.v1" (the location delegates).
    public let locationService = LocationService()
    /// The OAuth token event sinks reach through "hubhost.event_auth.v1", when `events.auth_token_url` is set.
    public let eventAuth: EventAuthTokens?
    private var manifest: HostManifest  // under lock once shared
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
        self.manifest = manifest
        self.pipeline = pipeline
        self.locator = locator
        self.workerExecutable = workerExecutable ?? Self.defaultWorkerExecutable()
        let tokens = EventAuthTokens(settings: manifest.events, http: HTTPFetcher())
        eventAuth = tokens.isConfigured ? tokens : nil
        self.logger = Logger(label: "hubhost.loader", pipeline: pipeline)
    }

    /// Loads every instance in order. Call once.
    public func loadAll() {
        for configuration in manifest.instances {
            let entry = loadEntry(configuration, generation: 0)
            lock.withLock { current.append(entry) }
            // Location delegates serve the plugins loaded after them (the location augmentation).
            if entry.plugins.contains(where: { $0.kind == .location }) {
                locationService.use(plugins(of: .location).map(LocationPlugin.init))
            }
        }
    }

    /// Loads one instance; a failure is recorded in the entry, never thrown.
    private func loadEntry(_ configuration: HostManifest.Instance, generation: Int) -> Entry {
        var entry = Entry(configuration: configuration, state: .disabled, libraryPath: nil, binaryABI: nil, plugins: [], worker: nil)
        entry.generation = generation
        do {
            try load(configuration, into: &entry)
            entry.state = .loaded
            logger.info(
                "instance '\(configuration.id)' loaded\(entry.worker.map { " in a worker process, \($0.stateDescription)" } ?? ""): \(entry.plugins.map { "\($0.pluginID) (\($0.kind.rawValue))" }.joined(separator: ", "))"
            )
        } catch let error as PluginLoadError {
            entry.state = error == .disabled ? .disabled : .failed(error)
            // Refused for its ABI version: the version is the binary's, whatever plugin.yaml claims.
            if case .abiMismatch(_, let binary, _) = error { entry.binaryABI = binary }
            if error != .disabled { logger.error("instance '\(configuration.id)' not loaded: \(error)") }
        } catch {
            entry.state = .failed(.manifestMismatch(path: configuration.use, reason: "\(error)"))
        }
        return entry
    }

    private func load(_ configuration: HostManifest.Instance, into entry: inout Entry) throws {
        guard configuration.problems.isEmpty else { throw PluginLoadError.manifestProblems(configuration.problems) }
        guard configuration.enabled else { throw PluginLoadError.disabled }
        guard let plugin = configuration.plugin else {
            throw PluginLoadError.manifestProblems([])
        }
        let path = try locator.locate(library: plugin.library, manifestFolder: plugin.folder).get()
        entry.libraryPath = path
        let hash = SHA256.hex(ofFile: path)
        entry.libraryHash = hash
        if let pin = configuration.sha256 {
            let actual = hash ?? "unreadable"
            guard actual == pin else { throw PluginLoadError.sha256Mismatch(path: path, expected: pin, actual: actual) }
        }
        if path.hasSuffix(".wasm") {
            // A WebAssembly module: its own instantiation per instance, run by the interpreter in
            // this process under its fuel and memory budget (isolation does not apply).
            let wasm = try WasmPluginInstance(
                file: try WasmModuleFile.read(path: path), manifest: plugin, instanceID: configuration.id,
                config: configuration.config, pipeline: pipeline, budget: configuration.wasm, http: configuration.http)
            entry.binaryABI = wasm.abiVersion
            entry.plugins = wasm.plugins.indices.map { PluginHandle(wasm: wasm, index: $0) }
            return
        }
        if configuration.isolation == .process {
            // The library is opened only in the worker: a library that crashes as it loads must not
            // take hubhost down.
            guard let executable = workerExecutable else {
                throw PluginLoadError.workerFailed(instance: configuration.id, reason: "no hubhost executable found to run the worker")
            }
            var settings = PluginWorker.Settings(
                instanceID: configuration.id, manifestPath: plugin.file, libraryPath: path,
                dataDirectory: manifest.dataDirectory, config: configuration.config,
                logFilter: manifest.logging, executable: executable)
            settings.callTimeoutMs = Int((configuration.callTimeoutSeconds * 1000).rounded(.up))
            settings.memoryLimitMB = configuration.memoryLimitMB
            settings.http = configuration.http
            let worker = PluginWorker(settings: settings, pipeline: pipeline)
            entry.worker = worker
            let exports = try worker.start()
            entry.binaryABI = ABIVersion.host
            entry.plugins = exports.enumerated().map {
                PluginHandle(worker: worker, index: $0.offset, pluginID: $0.element.id, kind: $0.element.kind)
            }
            return
        }
        let library = try PluginLibrary.open(path: try loadablePath(path, hash: hash))
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

    /// The path to dlopen for the library at `path` whose content has `hash`: `path` itself, unless
    /// this process already loaded other content from it; then a copy named by the hash in
    /// `<data_dir>/plugin-libraries/`, so that the replaced file is loaded as the new file while the
    /// old mapping stays valid for the instances still using it. Libraries are never unloaded: each
    /// distinct content loaded costs its mapping for the process's life (`loadedLibraryCount`).
    private func loadablePath(_ path: String, hash: String?) throws -> String {
        let key = (path as NSString).resolvingSymlinksInPath
        return try lock.withLock {
            guard let hash, let loaded = loadedLibraryHashes[key], loaded != hash else {
                if let hash, loadedLibraryHashes[key] == nil { loadedLibraryHashes[key] = hash }
                return path
            }
            let folder = (manifest.dataDirectory as NSString).appendingPathComponent("plugin-libraries")
            let copy = (folder as NSString).appendingPathComponent("\(hash.prefix(32))-\((path as NSString).lastPathComponent)")
            if !FileManager.default.fileExists(atPath: copy) {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                let partial = copy + ".part-\(getpid())"
                try? FileManager.default.removeItem(atPath: partial)
                try FileManager.default.copyItem(atPath: path, toPath: partial)
                guard SHA256.hex(ofFile: partial) == hash else {
                    try? FileManager.default.removeItem(atPath: partial)
                    throw PluginLoadError.notASharedObject(path: path, reason: "the file changed while it was copied; reload again")
                }
                _ = rename(partial, copy)
            }
            return copy
        }
    }

    /// Distinct library contents this process has dlopened through reloads beside the originals.
    public var loadedLibraryCount: Int { lock.withLock { loadedLibraryHashes.count } }

    /// What a reload did to the instances.
    public struct Change: Sendable {
        /// Instance ids, in plugins.yaml order.
        public var added: [String] = []
        public var removed: [String] = []
        public var changed: [String] = []
        public var unchanged: [String] = []
        /// The entries taken out: retire them (`retire`) once nothing uses them.
        public var retired: [Entry] = []
        /// The generation after the reload.
        public var generation = 0
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
    /// `retire`. Instances that fail to load are recorded as failed, as at start.
    public func reload(_ manifest: HostManifest) -> Change {
        var change = plan(manifest)
        let old = entries
        let generation = lock.withLock { currentGeneration + 1 }
        lock.withLock { self.manifest = manifest }
        var next: [Entry] = []
        for instance in manifest.instances {
            if change.unchanged.contains(instance.id), let kept = old.first(where: { $0.id == instance.id }) {
                next.append(kept)
            } else {
                next.append(loadEntry(instance, generation: generation))
            }
        }
        change.retired = old.filter { entry in !change.unchanged.contains(entry.id) }
        lock.withLock {
            current = next
            currentGeneration = generation
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
            && a.problems.isEmpty && b.problems.isEmpty && a.plugin?.library == b.plugin?.library
    }

    /// Whether the library file the entry loaded still has the content it had.
    /// A failed instance counts as changed, so a reload tries it again (its library may have been
    /// built or fixed since); a disabled one stays as it is.
    private func libraryUnchanged(_ entry: Entry, _ instance: HostManifest.Instance) -> Bool {
        if case .failed = entry.state { return false }
        guard let path = entry.libraryPath else { return entry.state == .disabled }
        return SHA256.hex(ofFile: path) == entry.libraryHash
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
