import Foundation
@_exported import HubHostKit

/// Loads one plugin library in isolation (no plugins.yaml, no data directory of the host, no
/// network) and drives its plugins with fixtures, for plugin authors' own test targets:
///
///     let harness = try PluginHarness(manifest: "Plugins/Geo/plugin.yaml", config: ["latitude": .double(1), ...])
///     defer { harness.destroy() }
///     let out = harness.augment(PluginHarness.event(name: "PLAYER LOADED"))
///     XCTAssertEqual(out.event[attribute: "Latitude"], .double(1))
///     XCTAssertTrue(harness.logged.contains { $0.message.contains("...") })
///
/// The library goes through the same loader the host uses (ABI check, descriptors, manifest
/// agreement), and config through the same schema check. A `.wasm` library (a WebAssembly build)
/// is driven the same way: each plugin gets a module instance of its own under the default fuel and
/// memory budget.
/// Sendable: every stored property is a `let` of a Sendable type. The adapters of the kinds the
/// headers mark [host-serialized] (content provider, logging) are made once per instance, so calls
/// from many threads go through one adapter and its lock, as the host's do; a `.wasm` instance
/// serializes every call itself.
public final class PluginHarness: Sendable {
    public let manifest: PluginManifest?
    /// The library: a `.so` or a `.wasm` module.
    package let library: PluginBinary
    /// Every plugin created, one per exported plugin, in export order.
    public let plugins: [PluginHandle]
    /// A scratch data directory, removed by destroy().
    public let dataDirectory: String
    private let capture = LogCapture()
    private let pipeline: LogPipeline
    /// One adapter per instance of the serialized kinds, by instance.
    private let contentProviders: [ObjectIdentifier: ContentProviderPlugin]
    private let loggers: [ObjectIdentifier: LoggingPlugin]

    /// Loads the plugin described by `manifest` (a plugin.yaml) and creates every export with
    /// `config`, checked against the schema with defaults filled in. `logging` sets what the
    /// plugin's own log calls capture (default: everything).
    /// `environment` is what the plugin gets beyond the services table: the HTTP policy (which
    /// hosts it may reach through hubhost.http.v1; none by default) and a location service
    /// (default: a fixed test place).
    public convenience init(
        manifest path: String, config: [String: PluginValue] = [:],
        logging: LogFilter = LogFilter(severity: .info, verbosity: .info),
        environment: HostEnvironment = PluginHarness.defaultEnvironment,
        locator: LibraryLocator = LibraryLocator()
    ) throws {
        let loaded = PluginManifest.load(path: HostManifest.absolute(path, from: FileManager.default.currentDirectoryPath))
        guard let manifest = loaded.manifest else { throw ManifestError(loaded.diagnostics) }
        let libraryPath = try locator.locate(library: manifest.library, manifestFolder: manifest.folder).get()
        try self.init(libraryPath: libraryPath, manifest: manifest, config: config, logging: logging, environment: environment)
    }

    /// No HTTP host allowed; a fixed location: 47.6097, -122.3422, "Test Place", "1 Test Street".
    public static let defaultEnvironment = HostEnvironment(
        http: .init(allowedHosts: [], timeoutSeconds: 5),
        location: LocationService(
            fixed: Location(
                latitude: 47.6097, longitude: -122.3422, accuracyMeters: nil, timeMs: nil,
                locationID: "test-place", name: "Test Place", address: "1 Test Street")))

    /// Loads a library directly (no plugin.yaml: config is passed to the plugin unchecked).
    public convenience init(
        library path: String, config: [String: PluginValue] = [:],
        logging: LogFilter = LogFilter(severity: .info, verbosity: .info),
        environment: HostEnvironment = PluginHarness.defaultEnvironment
    ) throws {
        try self.init(libraryPath: path, manifest: nil, config: config, logging: logging, environment: environment)
    }

    private init(
        libraryPath: String, manifest: PluginManifest?, config: [String: PluginValue], logging: LogFilter,
        environment: HostEnvironment
    ) throws {
        self.manifest = manifest
        library = try PluginBinary.open(path: libraryPath)
        if let manifest {
            let problems = library.disagreements(with: manifest)
            guard problems.isEmpty else { throw PluginLoadError.manifestMismatch(path: libraryPath, reason: problems.joined(separator: "; ")) }
        }
        let resolved = try manifest?.config.resolve(values: config) ?? config
        dataDirectory = NSTemporaryDirectory() + "plugintestkit-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        pipeline = LogPipeline(filter: logging)
        pipeline.attach([capture])
        var created: [PluginHandle] = []
        do {
            for export in library.exports {
                created.append(
                    try library.create(
                        export.id, instanceID: export.id, config: resolved, dataDirectory: dataDirectory, pipeline: pipeline,
                        environment: environment))
            }
        } catch {
            for instance in created.reversed() { instance.destroy() }
            try? FileManager.default.removeItem(atPath: dataDirectory)
            throw error
        }
        plugins = created
        contentProviders = Dictionary(
            uniqueKeysWithValues: created.filter { $0.kind == .contentProvider }.map { (ObjectIdentifier($0), ContentProviderPlugin($0)) })
        loggers = Dictionary(uniqueKeysWithValues: created.filter { $0.kind == .logging }.map { (ObjectIdentifier($0), LoggingPlugin($0)) })
    }

    /// What the plugins logged through the host services, in order.
    public var logged: [LogRecord] { capture.records }

    /// The plugin with `id`, or the first of `kind`.
    public func plugin(_ id: String? = nil, kind: PluginKind) -> PluginHandle? {
        plugins.first { $0.kind == kind && (id == nil || $0.pluginID == id) }
    }

    private func require(_ id: String?, _ kind: PluginKind) -> PluginHandle {
        guard let found = plugin(id, kind: kind) else {
            preconditionFailure("the library exports no \(kind.rawValue) plugin\(id.map { " with id '\($0)'" } ?? "")")
        }
        return found
    }

    // MARK: Fixtures

    /// An event to augment: a named event (Universal Behavior code 17) at a fixed time by default.
    public static func event(
        name: String = "TEST EVENT", typeCode: Int32 = 17, timeMs: Int64 = 1_402_358_400_000,
        attributes: [(String, PluginValue)] = []
    ) -> AugmentableEvent {
        AugmentableEvent(
            id: EventID.make(), typeCode: typeCode, name: name, timeMs: timeMs,
            attributes: attributes.map { (name: $0.0, value: $0.1) })
    }

    // MARK: Driving one call

    public func augment(_ event: AugmentableEvent, plugin id: String? = nil) -> AugmentationOutcome {
        AugmentationPlugin(require(id, .augmentation)).augment(event)
    }

    /// The operator's answer (false on a type mismatch or failure, as the campaign engine treats it).
    public func compare(_ event: PluginValue, _ trigger: PluginValue, operator id: String? = nil) -> Bool {
        TriggerOperatorPlugin(require(id, .triggerOperator)).compare(event: event, trigger: trigger).result
    }

    public func fetch(_ resource: String, plugin id: String? = nil) -> ContentProviderPlugin.Fetched {
        contentProviders[ObjectIdentifier(require(id, .contentProvider))]!.fetch(resource)
    }

    public func advertiserID(plugin id: String? = nil) -> AdvertiserIDAnswer {
        AdvertiserIDPlugin(require(id, .advertiserID)).answer()
    }

    public func location(plugin id: String? = nil) -> LocationAnswer {
        LocationPlugin(require(id, .location)).current()
    }

    /// A device_conditions plugin's answer at `dataDirectory` (default: the harness's scratch folder).
    public func deviceConditions(dataDirectory: String? = nil, plugin id: String? = nil) throws -> DeviceConditions {
        try DeviceConditionsPlugin(require(id, .deviceConditions)).read(dataDirectory: dataDirectory ?? self.dataDirectory)
    }

    /// A download_request plugin's conversion of `request`.
    public func convert(_ request: DownloadRequest, plugin id: String? = nil) throws -> DownloadRequest {
        try DownloadRequestPlugin(require(id, .downloadRequest)).convert(request)
    }

    /// Hands one record to a logging plugin.
    public func log(
        _ severity: LogSeverity, _ message: String, verbosity: LogVerbosity = .debug, source: String = "test",
        plugin id: String? = nil
    ) {
        loggers[ObjectIdentifier(require(id, .logging))]!.write(
            LogRecord(
                severity: severity, verbosity: verbosity, timeMs: Clock.wallMs(),
                source: source, message: message))
    }

    public func flushLogging(plugin id: String? = nil) { loggers[ObjectIdentifier(require(id, .logging))]!.flush() }

    /// Destroys every plugin and removes the scratch data directory. Safe to call twice.
    public func destroy() {
        for instance in plugins.reversed() { instance.destroy() }
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }

    deinit { destroy() }
}
