import Foundation
import GRDB
import Logging
import Synchronization

/// The content prefetch engine (the PCD SDK's VocService): registration with the catalog service,
/// the catalog in SQLite, the nine item states, the download queue and its policy. Blocking
/// methods (register, sync, download requests, round) are called from the BlockingPool or a CLI
/// thread; downloads themselves run as async tasks (FileDownloader). Several processes may share
/// one data directory: every transition is a compare-and-set in the catalog, downloads are
/// claimed by one process (its ProcessIdentity), and a download whose process died is resumed.
/// The last failure is kept in the catalog (PrefetchStore.lastFailure), so every process reads it.
/// Sendable: the service state (registration, last sync, downloads running here, userInfo) lives in
/// the `service` Mutex, in this file and its extensions; the rest are `let`s of Sendable types (the
/// plugin hooks `device`, `trackEvent` and `convertRequest` are init arguments).
public final class PrefetchEngine: Sendable {
    /// The PCD SDK's VOCServiceState values.
    public enum ServiceState: String, Sendable, Codable {
        /// No registration: none was made yet, the last one failed or was refused, or the service stopped knowing this device.
        case notRegistered = "NotRegistered"
        /// A registration request is under way.
        case registering = "Registering"
        /// Registered (a registration id is kept), and no catalog sync has succeeded yet.
        case registered = "Registered"
        /// Registered, and a catalog sync has succeeded.
        case initialized = "Initialized"
    }

    /// The `prefetch:` settings: those the engine was opened with, and the live keys as the last
    /// reload set them (`HubHost.liveReloadKeys`).
    package var settings: PrefetchSettings { liveSettings.current }
    private let liveSettings: LiveSettings<PrefetchSettings>
    /// The licence key registration uses, and where it came from.
    package let license: PrefetchLicense
    let store: PrefetchStore
    let itemsRoot: String
    let catalog: CatalogService?
    let providerInstance: String?
    let providerProblem: String?
    let notifications: HostNotifications
    let logger: Logger
    let downloader: FileDownloader
    /// The download_request hook's shape: a file request's URL and headers, its item and file role,
    /// to the URL and headers sent.
    typealias ConvertRequest =
        @Sendable (_ url: String, _ headers: [String: String], _ item: String, _ role: String) throws -> (String, [String: String])
    /// The device's conditions as the engine sees them: from the prefetch.device_conditions
    /// instance (HubHost.prefetch wires it), else PrefetchPolicy.Device.assumed. nil: the plugin
    /// could not tell (downloads wait with `device_conditions_unavailable`).
    let device: @Sendable () -> PrefetchPolicy.Device?
    /// Tracks an event in the event pipeline (HubHost.prefetch wires the event engine): consumption.
    let trackEvent: (@Sendable (Event) throws -> Void)?
    /// The download_request hook: may rewrite a file request's URL and headers before it is sent.
    let convertRequest: ConvertRequest

    /// What the engine knows of the service and its own work, changed by any thread.
    struct Service {
        var state: ServiceState
        var registerFailures = 0
        var nextRegisterAtMs: Int64 = 0
        var refusedLicense: String?
        var lastSyncMs: Int64?
        /// The downloads this process runs, by item.
        var running: [String: Task<Void, Never>] = [:]
        var closed = false
        var userInfos: [String: [String: JSONValue]] = [:]
    }
    let service: Mutex<Service>
    /// Local playback: the HLS endpoint's address and the layouts it serves (PrefetchPlayback.swift).
    let playbackState = PrefetchPlaybackState()
    /// The live sets being listened to, one per distinct filter (PrefetchLiveSet).
    let liveSets = PrefetchLiveSets()

    /// Retries after the first failed attempt of a main file before the item is Failed.
    public static let maxRetries = 3
    /// The most catalog pages fetched in one sync.
    static let maxPages = 1000

    init(
        settings: PrefetchSettings, dataDirectory: String, licenseOption: String?, provider: ContentProviderPlugin?,
        providerInstance: String?, providerProblem: String?, notifications: HostNotifications, logger: Logger,
        providerAllowedHosts: [String] = [], device: @escaping @Sendable () -> PrefetchPolicy.Device? = { .assumed },
        trackEvent: (@Sendable (Event) throws -> Void)? = nil,
        convertRequest: @escaping ConvertRequest = { url, headers, _, _ in (url, headers) }
    ) throws {
        liveSettings = LiveSettings(settings)
        self.device = device
        self.trackEvent = trackEvent
        self.convertRequest = convertRequest
        license = PrefetchLicense.resolve(option: licenseOption, manifest: settings.license)
        let root = (dataDirectory as NSString).appendingPathComponent("prefetch")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        itemsRoot = (root as NSString).appendingPathComponent("items")
        try FileManager.default.createDirectory(atPath: itemsRoot, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        store = try PrefetchStore(path: (root as NSString).appendingPathComponent("prefetch.sqlite"))
        catalog = provider.map(CatalogService.init)
        self.providerInstance = providerInstance
        self.providerProblem = providerProblem
        self.notifications = notifications
        self.logger = logger
        downloader = FileDownloader(readTimeout: settings.readTimeout, redirectHosts: providerAllowedHosts, owner: providerInstance ?? "")
        let state: ServiceState
        if try store.meta("registration_id") != nil {
            state = try store.meta("initialized") != nil ? .initialized : .registered
        } else {
            state = .notRegistered
        }
        service = Mutex(Service(state: state, lastSyncMs: try store.meta("last_sync_ms").flatMap { Int64($0) }))
    }

    // MARK: identity and registration

    /// The device id: prefetch.device_id, else one made once and kept in the catalog.
    public func deviceID() throws -> String {
        if let id = settings.deviceID { return id }
        if let id = try store.meta("device_id") { return id }
        let id = UUID().uuidString.lowercased()
        try store.setMeta(["device_id": id])
        return id
    }

    /// The registration state now, as this process last saw it; any thread.
    public var serviceState: ServiceState { service.withLock { $0.state } }

    /// Sets the state; `failure` .some(reason) records the last failure, .some(nil) clears a
    /// registration or sync failure (not a download's).
    func setState(_ new: ServiceState, failure: String?? = nil) {
        service.withLock { $0.state = new }
        switch failure {
        case .some(.some(let why)): recordFailure(why)
        case .some(.none): clearFailure(item: nil)
        case .none: break
        }
    }

    /// Registers with the catalog service now. A refused licence is not retried by
    /// itself; a transport or server failure is, with backoff (`round`). Returns the new state.
    @discardableResult
    public func register() throws -> ServiceState {
        guard let key = license.key else {
            let why = license.problem ?? "no licence key (--license, prefetch.license or \(PrefetchLicense.environmentVariable))"
            setState(.notRegistered, failure: .some(why))
            throw PrefetchError.notRegistered(why)
        }
        guard let catalog else {
            let why = providerProblem ?? "no content_provider instance"
            setState(.notRegistered, failure: .some(why))
            throw PrefetchError.notRegistered(why)
        }
        let previous = serviceState
        setState(.registering)
        let answer: CatalogProtocol.RegisterAnswer
        do {
            answer = try catalog.register(license: key, deviceID: try deviceID())
        } catch {
            let delay = service.withLock { service -> Double in
                service.registerFailures += 1
                let delay = min(3600, settings.registerRetry * pow(2, Double(min(service.registerFailures - 1, 20))))
                service.nextRegisterAtMs = Clock.wallMs() + Int64(delay * 1000)
                return delay
            }
            setState(previous == .registering ? .notRegistered : previous, failure: .some("\(error)"))
            if previous == .registered || previous == .initialized { throw error }
            setState(.notRegistered)
            notifications.post(PrefetchNotificationName.didFailToRegister, ["error": .string("\(error)"), "retryInSeconds": .number(delay)])
            throw error
        }
        guard answer.registered, let id = answer.registrationId else {
            let why = answer.reason ?? "the service refused the registration"
            service.withLock { $0.refusedLicense = key }
            try store.setMeta(["registration_id": nil, "initialized": nil])
            setState(.notRegistered, failure: .some("refused: \(why)"))
            notifications.post(PrefetchNotificationName.didFailToRegister, ["error": .string("refused: \(why)")])
            throw PrefetchError.notRegistered("refused: \(why)")
        }
        let policy = answer.policy.map { String(decoding: (try? PrefetchStore.encoder.encode($0)) ?? Data("{}".utf8), as: UTF8.self) }
        try store.setMeta(["registration_id": id, "server_policy": policy])
        service.withLock { service in
            service.registerFailures = 0
            service.nextRegisterAtMs = 0
        }
        let initialized = try store.meta("initialized") != nil
        setState(initialized ? .initialized : .registered, failure: .some(nil))
        notifications.post(PrefetchNotificationName.didRegister, ["registrationId": .string(id)])
        return serviceState
    }

    /// Records the last failure in the catalog, with the item whose download failed, if any.
    /// A database error is logged: it must not hide the failure being recorded.
    func recordFailure(_ why: String, item: String? = nil) {
        do { try store.setLastFailure(why, item: item, ms: Clock.wallMs()) } catch {
            logger.warning("prefetch: cannot record the failure '\(why.prefix(200))': \(error)")
        }
    }

    /// Clears the last failure when it is of `item` (nil: a registration or sync failure).
    func clearFailure(item: String?) {
        do { try store.clearLastFailure(item: item) } catch { logger.warning("prefetch: cannot clear the last failure: \(error)") }
    }

    func setSynced(_ ms: Int64) {
        service.withLock { service in
            service.lastSyncMs = ms
            if service.state == .registered { service.state = .initialized }
        }
        clearFailure(item: nil)
    }

    /// The service no longer knows this device (the PCD SDK's didBecomeNotRegistered): back to
    /// NotRegistered; `round` registers again with backoff.
    func markNotRegistered(_ why: String) {
        setState(.notRegistered, failure: .some(why))
        notifications.post(PrefetchNotificationName.didBecomeNotRegistered, ["reason": .string(why)])
    }

    // MARK: status

    /// The engine at a glance (`prefetch status`).
    public struct Status: Codable, Sendable, Equatable {
        /// The registration state.
        public var serviceState: ServiceState
        /// The last registration, sync or download failure, if any, as any process sharing the
        /// data directory recorded it.
        public var lastFailure: String?
        /// When the last failure happened, in ms since 1970.
        public var lastFailureMs: Int64?
        /// The item whose download failed last, when the last failure is a download's.
        public var lastFailureItem: String?
        /// Where the licence key came from.
        package var licenseSource: PrefetchLicense.Source
        /// Why the licence key cannot be used, if so.
        public var licenseProblem: String?
        /// This installation's device id, made once and stored in the catalog.
        public var deviceId: String
        /// The content_provider instance serving the catalog, if any.
        public var provider: String?
        /// Why there is no usable provider, if so.
        public var providerProblem: String?
        /// When this process last synced, in ms since 1970.
        public var lastSyncMs: Int64?
        /// Item count per state (every state present).
        public var items: [String: Int]
        /// The `item_download_behavior` setting.
        package var itemDownloadBehavior: PrefetchSettings.DownloadBehavior
        /// The network selection in force.
        package var networkSelection: PrefetchSettings.NetworkSelection
        /// The API override, if set.
        package var networkSelectionOverride: PrefetchSettings.NetworkSelection?
        /// The `max_concurrent_downloads` setting.
        public var maxConcurrentDownloads: Int
        /// The server's policy defaults, once registered.
        package var serverPolicy: CatalogProtocol.ServerPolicy?
        /// Whether policy-driven downloads may start now.
        public var downloadAllowed: Bool
        /// "InPolicy" or the reason (PrefetchWaitReason) policy-driven downloads wait now.
        public var downloadPolicyStatus: String
        /// The ids this process is downloading now.
        public var downloadingHere: [String]
    }

    /// Reads the engine's status (SQLite reads and the device conditions; blocking). Throws on a
    /// database error.
    public func status() throws -> Status {
        var counts: [String: Int] = [:]
        for state in PrefetchItemState.allCases { counts[state.rawValue] = 0 }
        for row in try store.pool.read({ db in try Row.fetchAll(db, sql: "SELECT state, count(*) AS n FROM item GROUP BY state") }) {
            counts[row["state"] as String] = row["n"]
        }
        let policy = try currentPolicy()
        let reason = try policyReason(policy, device: device(), fileSize: nil, categoryCount: nil)
        let snapshot = service.withLock { ($0.state, $0.lastSyncMs, Array($0.running.keys).sorted()) }
        let failure = try store.lastFailure()
        return Status(
            serviceState: snapshot.0, lastFailure: failure?.reason, lastFailureMs: failure?.ms, lastFailureItem: failure?.item,
            licenseSource: license.source, licenseProblem: license.problem,
            deviceId: try deviceID(), provider: providerInstance, providerProblem: providerProblem, lastSyncMs: snapshot.1,
            items: counts, itemDownloadBehavior: settings.itemDownloadBehavior, networkSelection: policy.networkSelection,
            networkSelectionOverride: try networkSelectionOverride(), maxConcurrentDownloads: settings.maxConcurrentDownloads,
            serverPolicy: try serverPolicy(), downloadAllowed: reason == nil,
            downloadPolicyStatus: reason?.rawValue ?? "InPolicy", downloadingHere: snapshot.2)
    }

    // MARK: policy

    func serverPolicy() throws -> CatalogProtocol.ServerPolicy? {
        guard let text = try store.meta("server_policy") else { return nil }
        return try? JSONDecoder().decode(CatalogProtocol.ServerPolicy.self, from: Data(text.utf8))
    }

    /// The stored network selection override, or nil. Throws on a database error.
    package func networkSelectionOverride() throws -> PrefetchSettings.NetworkSelection? {
        try store.meta("network_selection_override").flatMap(PrefetchSettings.NetworkSelection.init(rawValue:))
    }

    /// The PCD SDK's networkSelectionOverride: applies to downloads not yet started; nil clears it.
    package func setNetworkSelectionOverride(_ selection: PrefetchSettings.NetworkSelection?) throws {
        try store.setMeta(["network_selection_override": selection?.rawValue])
    }

    func currentPolicy() throws -> PrefetchPolicy {
        let server = try serverPolicy() ?? CatalogProtocol.ServerPolicy()
        let selection =
            try networkSelectionOverride() ?? settings.networkSelection
            ?? server.networkSelection.flatMap(PrefetchSettings.NetworkSelection.init(rawValue:)) ?? .wifi
        return PrefetchPolicy(
            networkSelection: selection, server: server, requiresCharging: settings.requiresCharging,
            batteryLow: settings.batteryLow, storageLow: UInt64(max(0, settings.storageLow)))
    }

    /// Bytes downloaded today (UTC day), for the daily limit.
    func bytesToday() throws -> Int64 {
        let day = Clock.wallMs() / 86_400_000
        guard try store.meta("bytes_day").flatMap({ Int64($0) }) == day else { return 0 }
        return try store.meta("bytes_today").flatMap { Int64($0) } ?? 0
    }

    func addBytesToday(_ count: Int64) throws {
        guard count > 0 else { return }
        let day = Clock.wallMs() / 86_400_000
        try store.pool.write { db in
            let stored = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'bytes_day'").flatMap { Int64($0) }
            let before =
                stored == day ? (try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'bytes_today'").flatMap { Int64($0) } ?? 0) : 0
            let (sum, overflow) = before.addingReportingOverflow(count)
            try PrefetchStore.setMeta(db, ["bytes_day": "\(day)", "bytes_today": "\(overflow ? Int64.max : sum)"])
        }
    }

    func policyReason(_ policy: PrefetchPolicy, device: PrefetchPolicy.Device?, fileSize: Int64?, categoryCount: Int?) throws -> PrefetchWaitReason? {
        if case .notRegistered = serviceState { return .notRegistered }
        guard let device else { return .deviceConditionsUnavailable }
        let calendar = Calendar.current
        let now = Date()
        let minute = calendar.component(.hour, from: now) * 60 + calendar.component(.minute, from: now)
        return policy.reason(device: device, minuteOfDay: minute, bytesToday: try bytesToday(), fileSize: fileSize, categoryCount: categoryCount)
    }

    // MARK: item access

    /// The stored item `id`, or nil. Throws on a database error.
    public func item(_ id: String) throws -> PrefetchItem? { try store.item(id) }

    /// Every stored category. Throws on a database error.
    public func categories() throws -> [PrefetchCategory] { try store.categories() }
    /// Every stored source. Throws on a database error.
    public func sources() throws -> [PrefetchSource] { try store.sources() }

    /// The memory-only userInfo of an item: never written to disk.
    public func userInfo(_ id: String) -> [String: JSONValue] { service.withLock { $0.userInfos[id] ?? [:] } }
    /// Replaces the memory-only userInfo of item `id` (lost when the engine closes); any thread.
    public func setUserInfo(_ id: String, _ info: [String: JSONValue]) { service.withLock { $0.userInfos[id] = info } }

    /// Changes item `id` when `change` says so, then announces a state change (after the commit).
    @discardableResult
    func transition(_ id: String, _ change: (inout PrefetchItem) throws -> Bool) throws -> PrefetchItem? {
        var previous: PrefetchItemState?
        let updated = try store.update(id) { item in
            previous = item.state
            return try change(&item)
        }
        if let updated, let previous, updated.state != previous { announceState(updated, previous: previous) }
        return updated
    }

    func announceState(_ item: PrefetchItem, previous: PrefetchItemState) {
        var payload: [String: JSONValue] = [
            "id": .string(item.uniqueId), "state": .string(item.state.rawValue), "previous": .string(previous.rawValue)
        ]
        if let reason = item.waitReason { payload["reason"] = .string(reason) }
        if let error = item.downloadError { payload["downloadError"] = .string(error) }
        notifications.post(PrefetchNotificationName.itemStateChanged, payload)
    }

    /// Where an item's files live: one folder per item under <data_dir>/prefetch/items.
    func folder(_ id: String) -> String { (itemsRoot as NSString).appendingPathComponent(id) }

    func localPath(item id: String, index: Int, role: String, url: String) -> String {
        let ext = URL(string: url)?.pathExtension ?? ""
        let safe = ext.count <= 8 && ext.allSatisfy { $0.isLetter || $0.isNumber } ? ext : ""
        return (folder(id) as NSString).appendingPathComponent("\(index)-\(role)\(safe.isEmpty ? "" : "." + safe)")
    }

    /// Removes an item's files (all, or all but the thumbnails); partial files too.
    func removeFiles(_ item: inout PrefetchItem, keepThumbnails: Bool = false) {
        for index in item.files.indices where !(keepThumbnails && item.files[index].role == "thumbnail") {
            try? FileManager.default.removeItem(atPath: item.files[index].localPath)
            try? FileManager.default.removeItem(atPath: item.files[index].localPath + ".part")
            item.files[index].done = false
            item.files[index].bytesDownloaded = 0
            item.files[index].validator = nil
        }
        // An HLS item's segments and layout (PrefetchEngine+HLS) go with its main index.
        try? FileManager.default.removeItem(atPath: hlsFolder(item.uniqueId))
        playbackState.forget(item.uniqueId)
        if !keepThumbnails { try? FileManager.default.removeItem(atPath: folder(item.uniqueId)) }
        item.bytesDownloaded = item.files.filter(\.done).reduce(0) { $0 + $1.bytesDownloaded }
    }

    /// Cancels this process's downloads (their items go back to Idle, to resume at the next start)
    /// and stops the HTTP client. `HubHost.shutdown()` calls it; blocks until the client stops.
    public func close() {
        let tasks: [Task<Void, Never>] = service.withLock { service in
            service.closed = true
            return Array(service.running.values)
        }
        for task in tasks { task.cancel() }
        // Downloads this process held are interrupted: Idle, and queued again at the next start.
        for id in service.withLock({ Array($0.running.keys) }) {
            _ = try? transition(id) { item in
                guard item.state == .downloading else { return false }
                item.state = .idle
                item.waitReason = PrefetchWaitReason.waitingToRetry.rawValue
                item.retryAtMs = Clock.wallMs()
                return true
            }
        }
        try? downloader.client.syncShutdown()
    }
}

extension PrefetchEngine {
    /// Applies a reload's `prefetch:` section, whose changes are live keys only (`HubHost.reload`
    /// checks): the policy, the queue's concurrency, purge, the sync interval and the retry delays
    /// read the new values from their next use (the next round, within `roundInterval`).
    package func applyLiveSettings(_ new: PrefetchSettings) {
        liveSettings.replace(new)
    }
}
