import Foundation
import Logging

/// The plugin instances of one host, loaded in plugins.yaml order. A bad instance (manifest
/// problem, missing or foreign library, ABI mismatch, failing create...) is recorded with its
/// reason and skipped; the others load regardless.
/// Safe to share: every field but `entries` is a `let` (the location service and token cache lock their own state), and
/// `entries` is written only by `loadAll`, which HubHost.init runs before it shares the registry; after that it is only
/// read.
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

        /// The instance id from plugins.yaml.
        public var id: String { configuration.id }
    }

    /// Every configured instance in plugins.yaml order, whatever became of it (after `loadAll`).
    public private(set) var entries: [Entry] = []
    /// The location service plugins reach through "hubhost.location.v1" (the location delegates).
    public let locationService = LocationService()
    /// The OAuth token event sinks reach through "hubhost.event_auth.v1", when `events.auth_token_url` is set.
    public let eventAuth: EventAuthTokens?
    private let manifest: HostManifest
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
            var entry = Entry(configuration: configuration, state: .disabled, libraryPath: nil, binaryABI: nil, plugins: [], worker: nil)
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
            entries.append(entry)
            // Location delegates serve the plugins loaded after them (the location augmentation).
            if entry.plugins.contains(where: { $0.kind == .location }) {
                locationService.use(plugins(of: .location).map(LocationPlugin.init))
            }
        }
    }

    private func load(_ configuration: HostManifest.Instance, into entry: inout Entry) throws {
        guard configuration.problems.isEmpty else { throw PluginLoadError.manifestProblems(configuration.problems) }
        guard configuration.enabled else { throw PluginLoadError.disabled }
        guard let plugin = configuration.plugin else {
            throw PluginLoadError.manifestProblems([])
        }
        let path = try locator.locate(library: plugin.library, manifestFolder: plugin.folder).get()
        entry.libraryPath = path
        if let pin = configuration.sha256 {
            let actual = SHA256.hex(ofFile: path) ?? "unreadable"
            guard actual == pin else { throw PluginLoadError.sha256Mismatch(path: path, expected: pin, actual: actual) }
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
        let library = try PluginLibrary.open(path: path)
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
                            eventAuth: eventAuth)))
            } catch {
                // All of an instance's plugins load, or none: undo the ones already created.
                for instance in created.reversed() { instance.destroy() }
                throw error
            }
        }
        entry.plugins = created.map(PluginHandle.init)
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
