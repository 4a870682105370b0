import Foundation
import Logging
import Synchronization

/// The hubhost runtime: one manifest, its data directory, its logging pipeline and its plugins.
/// The CLI, the HTTP API and embedding apps all use this one API.
///
///     let host = try HubHost(manifestPath: "plugins.yaml")
///     defer { host.shutdown() }
///     print(host.advertiserID())
///
/// Sendable: the manifest, and the engines with the shut-down flag, each live in a Mutex; every
/// other stored property is a `let` of a Sendable type.
public final class HubHost: Sendable {
    /// The manifest the host runs on, with its defaults and diagnostics: the one it was started
    /// from, or the last one a reload applied.
    public var manifest: HostManifest { currentManifest.withLock { $0 } }
    private let currentManifest: Mutex<HostManifest>
    /// Held through a reload: one at a time.
    let reloading = Mutex(())
    /// The destinations given at start beside the logging plugins (kept across reloads).
    let extraDestinations: [LogDestination]
    /// The logging pipeline: applies the `logging:` filter and hands records to the logging plugins.
    public let pipeline: LogPipeline
    /// The plugin instances of plugins.yaml, loaded at start-up; destroyed by `shutdown()`.
    public let registry: PluginRegistry
    /// The host's logger (label `hubhost`), writing through `pipeline`.
    public let logger: Logger
    /// Notifications for the integrating app (hub state, progress, app actions, errors).
    public let notifications = HostNotifications()

    /// Loads `manifestPath` and starts the runtime. Throws ManifestError only when the manifest
    /// cannot be used at all; problems inside it are logged and disable only what they touch.
    public convenience init(manifestPath: String = "plugins.yaml", locator: LibraryLocator = LibraryLocator()) throws {
        try self.init(manifest: HostManifest.load(path: manifestPath), locator: locator, extraDestinations: [])
    }

    /// Starts the runtime from a parsed manifest.
    public convenience init(manifest: HostManifest, locator: LibraryLocator = LibraryLocator()) throws {
        try self.init(manifest: manifest, locator: locator, extraDestinations: [])
    }

    /// Loads `manifestPath` and starts the runtime; `extraDestinations` receive log records beside
    /// the logging plugins (the CLI's console output, tests capturing records).
    package convenience init(manifestPath: String, locator: LibraryLocator = LibraryLocator(), extraDestinations: [LogDestination]) throws {
        try self.init(manifest: HostManifest.load(path: manifestPath), locator: locator, extraDestinations: extraDestinations)
    }

    /// Starts the runtime from a parsed manifest; `extraDestinations` receive log records beside the
    /// logging plugins.
    package init(manifest: HostManifest, locator: LibraryLocator = LibraryLocator(), extraDestinations: [LogDestination]) throws {
        currentManifest = Mutex(manifest)
        self.extraDestinations = extraDestinations
        pipeline = LogPipeline(filter: manifest.logging)
        logger = Logger(label: "hubhost", pipeline: pipeline)
        try DataDirectory.prepare(manifest.dataDirectory)
        for diagnostic in manifest.diagnostics {
            logger.error("\(diagnostic)")
        }
        registry = PluginRegistry(manifest: manifest, pipeline: pipeline, locator: locator)
        registry.loadAll()
        pipeline.attach(logDestinations())
    }

    /// Every plugin stuck in a call past its deadline (what health reports): the registry's, and
    /// the campaign evaluation while a trigger operator call in it overran.
    public var stuckPlugins: [StuckPlugin] {
        let campaigns = engines.withLock { $0.campaigns }
        return registry.stuckPlugins + (campaigns?.stuckEvaluation.map { [$0] } ?? [])
    }

    /// The logging plugins, the destinations given at start, and the engines' error notifications.
    func logDestinations() -> [LogDestination] {
        registry.plugins(of: .logging).map(LoggingPlugin.init) + extraDestinations + [EngineErrorNotifications(notifications)]
    }

    /// Replaces the manifest after a reload applied it.
    func setManifest(_ manifest: HostManifest) {
        currentManifest.withLock { $0 = manifest }
    }

    /// The engines, each opened on first use, and whether the host was shut down.
    struct Engines {
        var events: EventEngine?
        var campaigns: CampaignEngine?
        var identityStore: IdentityStore?
        var identityManager: MobileIdentityManager?
        var hub: HubEngine?
        var delivery: ContentDelivery?
        var prefetch: PrefetchEngine?
        var isShutDown = false
    }
    let engines = Mutex(Engines())

    /// The event engine, opened on first use (its SQLite store lives in the data directory). When
    /// campaigns are enabled, the campaign engine hears every tracked event.
    public func events() throws -> EventEngine {
        try engines.withLock { try openEngines(&$0).events }
    }

    /// The campaign engine (with the event engine it listens to); nil when `campaigns.enabled` is false.
    public func campaigns() throws -> CampaignEngine? {
        try engines.withLock { try openEngines(&$0).campaigns }
    }

    private func openEngines(_ engines: inout Engines) throws -> (events: EventEngine, campaigns: CampaignEngine?) {
        if let eventEngine = engines.events { return (eventEngine, engines.campaigns) }
        try manifest.requireNoProblems(inSections: [EventSettings.sectionName, DeepLinkRouter.sectionName, CampaignSettings.sectionName])
        let engine = try EventEngine(
            settings: manifest.events, dataDirectory: manifest.dataDirectory,
            augmentations: registry.plugins(of: .augmentation).map(AugmentationPlugin.init),
            pipeline: pipeline, deepLinks: manifest.deepLinks, sink: eventSink())
        engines.events = engine
        // Once an identity exists (identity.sqlite), its ids go on every event.
        if FileManager.default.fileExists(atPath: identityStorePath) {
            engine.identitySource = Self.identityValues(try openIdentityStore(&engines))
        }
        if manifest.prefetch.enabled {
            // A push payload addressed to prefetch refreshes the catalog (PrefetchEngine.notificationKey).
            engine.observe { [weak self] event in
                guard event.type == .notificationReceived,
                    event.attributes.contains(where: { $0.name == PrefetchEngine.notificationKey && $0.value == .string("refresh") })
                else { return }
                do { try self?.prefetch()?.requestRefresh() } catch { self?.logger.error("prefetch: cannot ask for a refresh: \(error)") }
            }
        }
        if manifest.campaigns.enabled {
            let operators = OperatorSet(registry.plugins(of: .triggerOperator))
            for conflict in operators.conflicts { logger.warning("\(conflict)") }
            let campaigns = try CampaignEngine(state: try KeyValueState(store: engine.store), operators: operators, pipeline: pipeline)
            campaigns.contextRule = manifest.campaigns.contextRule
            campaigns.frequencyCaps = manifest.campaigns.frequencyCaps
            // `Campaign Shown` and `Campaign Holdout` go through the event pipeline like any event.
            let campaignLog = logger
            campaigns.trackEvents { [weak engine] events in
                for event in events {
                    do { try engine?.track(event) } catch { campaignLog.error("campaigns: the event \(event.name) could not be tracked: \(error)") }
                }
            }
            if let file = manifest.campaigns.file {
                do { try campaigns.loadFile(file) } catch { logger.error("campaigns: \(error)") }
            }
            // A batch at a time: one re-read of the shared state and at most one commit per
            // batch, with the same matches as event by event (logEvents evaluates in order).
            // Under the augmentation deadline: a stuck trigger operator never holds the event path.
            let deadline = manifest.events.augmentationTimeout
            engine.observeBatches { [weak campaigns] events in
                RuntimeMetrics.campaignEvaluations(events.count)
                campaigns?.logEvents(events, deadlineSeconds: deadline)
            }
            engines.campaigns = campaigns
        }
        return (engine, engines.campaigns)
    }

    var identityStorePath: String { (manifest.dataDirectory as NSString).appendingPathComponent("identity.sqlite") }

    private func openIdentityStore(_ engines: inout Engines) throws -> IdentityStore {
        if let identityStore = engines.identityStore { return identityStore }
        let store = try IdentityStore(path: identityStorePath)
        engines.identityStore = store
        return store
    }

    static func identityValues(_ store: IdentityStore) -> @Sendable () -> [(field: String, value: PluginValue)] {
        { [weak store] in
            guard let identity = try? store?.identity() else { return [] }
            var values: [(field: String, value: PluginValue)] = []
            if let id = identity.recipientId, !id.isEmpty { values.append(("Recipient Id", .string(id))) }
            if let id = identity.mobileUserId, !id.isEmpty { values.append(("Mobile User Id", .string(id))) }
            return values
        }
    }

    /// The mobile identity manager (`identity:`), opened on first use: recipient setup, identity
    /// checks and journaled merges over the Engage XMLAPI. Its ids go on every event from then on,
    /// and each identity change is tracked as an event.
    public func identity() throws -> MobileIdentityManager {
        try manifest.requireNoProblems(inSections: [IdentitySettings.sectionName])
        let engine = try self.events()
        return try engines.withLock { engines in
            if let identityManager = engines.identityManager { return identityManager }
            let store = try openIdentityStore(&engines)
            engine.identitySource = Self.identityValues(store)
            let settings = manifest.identity
            let identityLogger = Logger(label: "hubhost.identity", pipeline: pipeline)
            let client = XMLAPIClient(settings: settings.clientSettings(events: manifest.events), logger: identityLogger)
            let manager = MobileIdentityManager(
                settings: settings, client: client, store: store,
                mobileUserIDs: try identifierGenerator(settings.string("mobileUserIdGenerator"), key: "identity.mobileUserIdGenerator"),
                auditKeys: try identifierGenerator(settings.string("auditRecordPrimaryKeyGenerator"), key: "identity.auditRecordPrimaryKeyGenerator"),
                logger: identityLogger,
                onChange: { [weak engine] change in
                    do { _ = try engine?.track(change.event, autoFlush: false) } catch {
                        identityLogger.error("cannot track \(change.kind.rawValue): \(error)")
                    }
                })
            engines.identityManager = manager
            return manager
        }
    }

    /// A `user_id_generator` instance by id, or the built-in UUID when `instanceID` is empty.
    func identifierGenerator(_ instanceID: String, key: String) throws -> any IdentifierGenerator {
        guard !instanceID.isEmpty else { return BuiltInUUIDGenerator() }
        guard let handle = registry.plugins(of: .userIDGenerator).first(where: { $0.instanceID == instanceID }) else {
            throw MobileIdentityManager.Failure(
                description: "\(key) '\(instanceID)' is not a loaded user_id_generator instance (see hubhost plugins list)")
        }
        return UserIDGeneratorPlugin(handle)
    }

    /// The sink `events.sink` names: nil for the built-in HTTP collector; a sink that sends nothing
    /// (and says why in every flush) when the name is not a loaded event_sink instance.
    func eventSink() -> EventSink? {
        let id = manifest.events.sink
        guard !id.isEmpty else { return nil }
        guard let entry = registry.entry(id: id) else {
            logger.error("events.sink: no plugin instance '\(id)' in plugins.yaml; events stay NOT_POSTED")
            return UnavailableEventSink(name: id, reason: "events.sink: no plugin instance '\(id)' in plugins.yaml")
        }
        guard entry.state == .loaded, let plugin = entry.plugins.first(where: { $0.kind == .eventSink }) else {
            let why = entry.state == .loaded ? "it exports no event_sink" : "it is \(entry.state.name)"
            logger.error("events.sink: instance '\(id)' cannot deliver events (\(why)); events stay NOT_POSTED")
            return UnavailableEventSink(name: id, reason: "events.sink: instance '\(id)' cannot deliver events (\(why))")
        }
        let sinkLogger = logger
        return PluginEventSink(EventSinkPlugin(plugin)) { message in sinkLogger.error("\(message)") }
    }

    /// The Content Hub engine, opened on first use; nil when `hub.enabled` is false.
    public func hub() throws -> HubEngine? {
        try engines.withLock { engines in
            guard manifest.hub.enabled else { return nil }
            if let hubEngine = engines.hub { return hubEngine }
            try manifest.requireNoProblems(inSections: [HubSettings.sectionName])
            // Weak: the engine may outlive its host; its metrics then have nowhere to go (and say so in the log).
            let metrics = HubMetrics(
                track: { [weak self] event in
                    guard let self else { throw HubMetrics.SinkGone() }
                    // A page view must not wait for an fsync: metrics are written in batches.
                    return try self.events().trackInBackground(event)
                },
                // The page-view recorder's batches: many views' events in one transaction, on
                // the recorder's own thread (never a request's), committed without waiting for
                // the disk: no one waits on them (the page was answered already).
                trackBatch: { [weak self] events in
                    guard let self else { throw HubMetrics.SinkGone() }
                    return try self.events().trackBatch(events, waitForDisk: false)
                },
                advertiserID: { [weak self] in
                    self?.advertiserID()
                        ?? AdvertiserIDDecision(
                            advertiserID: nil, limitAdTracking: false, decidedBy: nil, reason: "the host was shut down")
                },
                logger: logger)
            let engine = try HubEngine(
                settings: manifest.hub, dataDirectory: manifest.dataDirectory,
                notifications: notifications, pipeline: pipeline, metrics: metrics,
                beforePresent: { [weak self] wait in try self?.delivery()?.prepareForPresent(wait: wait) })
            engines.hub = engine
            return engine
        }
    }

    /// Content delivery for the Content Hub (Hub/Delivery), opened on first use with the hub's
    /// provider instance (`hub.provider`, else the first content_provider); nil when the hub is off.
    public func delivery() throws -> ContentDelivery? {
        guard let hub = try hub() else { return nil }
        return engines.withLock { engines in
            if let contentDelivery = engines.delivery { return contentDelivery }
            // One answer to "which instance is the hub's provider", the manifest's (the same
            // instance hub.db_service_url was handed to), then the loaded plugin of that instance.
            let instanceID = manifest.hubProviderIndex.map { manifest.instances[$0].id }
            let handle = instanceID.flatMap { id in registry.plugins(of: .contentProvider).first { $0.instanceID == id } }
            var problem: String?
            if handle == nil {
                problem =
                    instanceID.map { "the hub's provider instance '\($0)' is not a loaded content_provider (see hubhost plugins list)" }
                    ?? manifest.hub.provider.map { "hub.provider '\($0)' names no instance in plugins.yaml" }
                    ?? "no content_provider instance is loaded in plugins.yaml"
            }
            let delivery = ContentDelivery(
                hub: hub, provider: handle.map(ContentProviderPlugin.init), providerInstance: handle?.instanceID,
                providerProblem: problem, location: { [weak self] in self?.location()?.location },
                pipeline: pipeline)
            engines.delivery = delivery
            return delivery
        }
    }

    /// The content prefetch engine (Prefetch/), opened on first use; nil when `prefetch.enabled`
    /// is false. `license` is the Swift API option, which wins over prefetch.license and
    /// HUBHOST_PREFETCH_CONFIG; it counts on the call that opens the engine.
    public func prefetch(license: String? = nil) throws -> PrefetchEngine? {
        try engines.withLock { engines in
            let settings = manifest.prefetch
            guard settings.enabled else { return nil }
            if let prefetchEngine = engines.prefetch { return prefetchEngine }
            try manifest.requireNoProblems(inSections: [PrefetchSettings.sectionName])
            let providers = registry.plugins(of: .contentProvider)
            let handle = settings.provider.map { id in providers.first { $0.instanceID == id } } ?? providers.first
            var problem: String?
            if handle == nil {
                problem =
                    settings.provider.map { "prefetch.provider '\($0)' is not a loaded content_provider instance (see hubhost plugins list)" }
                    ?? "no content_provider instance is loaded in plugins.yaml"
            }
            let engine = try PrefetchEngine(
                settings: settings, dataDirectory: manifest.dataDirectory, licenseOption: license,
                provider: handle.map(ContentProviderPlugin.init), providerInstance: handle?.instanceID,
                providerProblem: problem, notifications: notifications, logger: logger,
                providerAllowedHosts: manifest.instances.first { $0.id == handle?.instanceID }?.http.allowedHosts ?? [],
                device: prefetchDevice(settings),
                // Consumption records become events; weak: the engine may outlive its host.
                trackEvent: { [weak self] event in
                    guard let self else { throw PrefetchError.invalid("the host was shut down") }
                    _ = try self.events().track(event)
                },
                convertRequest: prefetchConvertRequest(settings))
            engines.prefetch = engine
            return engine
        }
    }

    /// The engine's device conditions from its device_conditions instance (prefetch.device_conditions),
    /// else PrefetchPolicy.Device.assumed. A named instance that is not loaded makes downloads wait
    /// (`device_conditions_unavailable`) rather than run without the integrator's rule.
    private func prefetchDevice(_ settings: PrefetchSettings) -> @Sendable () -> PrefetchPolicy.Device? {
        guard let id = settings.deviceConditions else { return { .assumed } }
        guard let handle = registry.plugins(of: .deviceConditions).first(where: { $0.instanceID == id }) else {
            logger.error("prefetch.device_conditions '\(id)' is not a loaded device_conditions instance: downloads wait")
            return { nil }
        }
        let plugin = DeviceConditionsPlugin(handle)
        let dataDirectory = manifest.dataDirectory
        let logger = self.logger
        return {
            do {
                let conditions = try plugin.read(dataDirectory: dataDirectory)
                return PrefetchPolicy.Device(
                    network: conditions.network.rawValue, metered: conditions.metered,
                    batteryLevel: conditions.batteryLevel, charging: conditions.charging,
                    freeBytes: conditions.freeBytes)
            } catch {
                logger.warning("prefetch: device_conditions '\(id)': \(error)")
                return nil
            }
        }
    }

    /// The engine's download_request hook from its instance (prefetch.download_request), else none
    /// (requests go as the catalog says). A named instance that is not loaded makes downloads fail.
    private func prefetchConvertRequest(_ settings: PrefetchSettings) -> PrefetchEngine.ConvertRequest {
        guard let id = settings.downloadRequest else { return { url, headers, _, _ in (url, headers) } }
        guard let handle = registry.plugins(of: .downloadRequest).first(where: { $0.instanceID == id }) else {
            logger.error("prefetch.download_request '\(id)' is not a loaded download_request instance: downloads fail")
            return { _, _, _, _ in
                throw PrefetchError.invalid("prefetch.download_request '\(id)' is not a loaded download_request instance")
            }
        }
        let plugin = DownloadRequestPlugin(handle)
        return { url, headers, item, role in
            let converted = try plugin.convert(DownloadRequest(url: url, headers: headers, itemId: item, fileRole: role))
            return (converted.url, converted.headers)
        }
    }

    /// The advertiser ID the advertiser_id delegates decide, asked in plugins.yaml order.
    public func advertiserID() -> AdvertiserIDDecision {
        AdvertiserIDResolver(plugins: registry.plugins(of: .advertiserID).map(AdvertiserIDPlugin.init), logger: logger).decide()
    }

    /// The current location from the first location delegate that has one.
    public func location() -> (instance: String, location: Location)? {
        for plugin in registry.plugins(of: .location).map(LocationPlugin.init) {
            switch plugin.current() {
            case .location(let location): return (plugin.handle.instanceID, location)
            case .unavailable: continue
            case .failed(let status, let message):
                logger.warning("location delegate '\(plugin.handle.instanceID)' failed (\(StatusCode.name(status))): \(message)")
            }
        }
        return nil
    }

    /// Flushes the logging plugins and destroys every plugin instance. Safe to call twice.
    public func shutdown() {
        // Once, even when two threads call it together: the flag is taken under the engines' lock.
        let (first, opened): (Bool, Engines) = engines.withLock { engines in
            defer { engines.isShutDown = true }
            return (!engines.isShutDown, engines)
        }
        guard first else { return }
        if let campaignEngine = opened.campaigns {
            campaignEngine.finishMessageStreams()  // no stream outlives the store it reads
            do { try campaignEngine.saveIfChanged() } catch { logger.error("campaigns: cannot save the user cache: \(error)") }
        }
        opened.delivery?.close()  // no sync may outlive its provider
        opened.prefetch?.close()  // nor a download
        // Page views not recorded yet (their metrics go to the event engine, so first).
        if let hubEngine = opened.hub, !hubEngine.viewRecorder.waitUntilDrained() {
            logger.error("hub: page views still unrecorded after 60 s at shutdown: \(hubEngine.viewRecorder.counts.pending)")
        }
        opened.events?.waitForBackgroundWrites()  // metrics still in memory
        pipeline.flush()
        pipeline.attach([])
        registry.shutdown()
    }

    deinit { shutdown() }
}

/// The data directory (default `./.hubhost/`), created on first use, readable by its owner only
/// (0700): it holds the event store, user data, logs and bundles. An existing one is tightened to
/// 0700 too; files hubhost creates in it are 0600 (`restrict`).
public enum DataDirectory {
    /// Creates the data directory at `path` with mode 0700, or sets an existing one to 0700. Throws
    /// ManifestError (key `data_dir`) when it cannot be created.
    public static func prepare(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
            chmod(path, 0o700)
        } catch {
            throw ManifestError([
                ManifestDiagnostic(
                    file: path, line: 1, column: 1, key: "data_dir",
                    message: "cannot create the data directory: \(error.localizedDescription)")
            ])
        }
    }

    /// Makes the files at `paths` that exist owner-only (0600), e.g. a SQLite file and its -wal/-shm.
    public static func restrict(_ paths: [String]) {
        for path in paths where FileManager.default.fileExists(atPath: path) { chmod(path, 0o600) }
    }

    /// A SQLite file with its WAL and shared-memory files.
    public static func sqliteFiles(_ path: String) -> [String] { [path, path + "-wal", path + "-shm"] }
}
