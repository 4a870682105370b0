import Foundation
import HubHostABI

/// Content delivery (the ZBiM SDK's "Content Delivery"): asks the hub's content_provider for the
/// service's settings, applies the remote disable and the pilot program to the hub state, and, when
/// the service's bundle differs from the active one, downloads it with progress and hands it to
/// `HubEngine.install`, which verifies, stores and activates it. A failure keeps the previous bundle.
///
/// The service's modes (DeliverySettings) drive when this happens: `prepareForPresent()` before a
/// present (on_demand, dont_show_stale, stale_ok) and `serveStartUp()` / `isRecurringSyncDue` in
/// `hubhost serve` (immediate, recurring). Content is *stale* until a sync succeeded in this run,
/// and again once that success is older than the service's refreshInterval.
/// @unchecked: its state is guarded by an NSCondition (syncs wait for one in flight), which Mutex cannot
/// express. `record`, `recordStamp`, `lastSuccessThisRunMs`, `lastAttemptMs`, `inFlight`, `lastResult`,
/// `syncGeneration`, `activeDigest` and `isClosed` are read and written under the `lock` condition; the rest are `let`s
/// (the `location` closure only calls HubHost.location(), itself thread-safe).
public final class ContentDelivery: @unchecked Sendable {
    /// The hub engine this delivery serves: it installs the bundles and takes the service's remote disable and pilot program.
    public let hub: HubEngine
    /// The provider instance in use, nil when none is loaded (`providerProblem` says why).
    public let provider: ContentProviderPlugin?
    /// The id of the content_provider instance in plugins.yaml in use (`hub.provider`); nil when none is loaded.
    public let providerInstance: String?
    /// Why no provider is loaded (e.g. `hub.provider` names no instance in plugins.yaml); nil when one is loaded.
    public let providerProblem: String?
    private let location: () -> Location?
    private let pipeline: LogPipeline

    private let lock = NSCondition()
    /// `delivery.json` as last read or written, and the stamp of the file then: other processes
    /// write it too (DeliveryRecord.update), and it is re-read when the stamp changed.
    private var record: DeliveryRecord
    private var recordStamp: FileStamp
    private var lastSuccessThisRunMs: Int64?
    private var lastAttemptMs: Int64?
    private var inFlight = false
    private var lastResult: Result<SyncReport, Error>?
    private var syncGeneration = 0
    private var activeDigest: (path: String, sha256: String)?
    private var isClosed = false

    /// The most a small document (settings, metadata) may be.
    static let documentLimit = 4 << 20

    /// Delivery for `hub` through `provider` (nil: every sync throws `noProvider` with `providerProblem`). Reads what delivery
    /// recorded in the hub's directory (`delivery.json`) and applies the service's last settings at once. `location` gives the
    /// device's place, sent with the settings request (`location_id`, else `latitude` and `longitude`); nil: none is sent.
    public init(
        hub: HubEngine, provider: ContentProviderPlugin?, providerInstance: String?, providerProblem: String? = nil,
        location: @escaping () -> Location? = { nil }, pipeline: LogPipeline
    ) {
        self.hub = hub
        self.provider = provider
        self.providerInstance = providerInstance
        self.providerProblem = providerProblem
        self.location = location
        self.pipeline = pipeline
        recordStamp = DeliveryRecord.stamp(in: hub.directory)
        record = DeliveryRecord.load(from: hub.directory)
        // The service's last word holds until it says otherwise, also in a new process.
        if let settings = record.settings { apply(settings) }
    }

    // MARK: What is known

    /// The service's last settings document, or the defaults when none was fetched yet.
    package var settings: DeliverySettings { currentRecord().settings ?? DeliverySettings() }
    /// What delivery remembers (also across runs, and what other processes on the data directory
    /// recorded).
    package var lastRecord: DeliveryRecord { currentRecord() }

    /// True until a sync succeeded in this run, and again once that is older than refreshInterval.
    public var isStale: Bool {
        let interval = currentRecord().settings?.refreshInterval ?? DeliverySettings().refreshInterval
        return lock.withLock {
            guard let success = lastSuccessThisRunMs else { return true }
            return Double(Clock.wallMs() - success) / 1000 >= interval
        }
    }

    /// The record, re-read when another process saved it since; settings it brings (the remote
    /// disable, the pilot program) are applied to the hub state.
    private func currentRecord() -> DeliveryRecord {
        let stamp = DeliveryRecord.stamp(in: hub.directory)  // before reading: a later save is noticed next time
        let (current, changed) = lock.withLock { () -> (DeliveryRecord, Bool) in
            guard stamp != recordStamp else { return (record, false) }
            let before = record.settings
            record = DeliveryRecord.load(from: hub.directory)
            recordStamp = stamp
            return (record, record.settings != before)
        }
        if changed { apply(current.settings ?? DeliverySettings()) }
        return current
    }

    /// Changes the record on disk (on what is stored now, under its lock) and here.
    private func updateRecord(_ change: (inout DeliveryRecord) -> Void) {
        do {
            let (saved, stamp) = try DeliveryRecord.update(in: hub.directory, change)
            lock.withLock {
                record = saved
                recordStamp = stamp
            }
        } catch {
            lock.withLock { change(&record) }
            pipeline.log(.warning, .debug, source: "hub", "cannot save \(DeliveryRecord.path(in: hub.directory)): \(error)")
        }
    }

    // MARK: Sync

    /// What one sync did.
    public struct SyncReport: Codable, Equatable, Sendable {
        /// "updated", "current" or "skipped" (disabled or not enrolled: nothing downloaded).
        public var result: String
        /// What happened, for a person, e.g. "bundle 2026.11.22-1 downloaded, verified and active".
        public var message: String
        package var settings: DeliverySettings
        /// The service's bundle, when its metadata was read.
        public var bundleVersion: String?
        /// The SHA-256 of the service's bundle, 64 lowercase hex digits, when its metadata was read (nil when `skipped`).
        public var bundleSHA256: String?
    }

    /// Why a sync failed. The previous bundle stays active in every case.
    public enum SyncError: Error, Equatable, CustomStringConvertible {
        /// No content_provider instance is loaded; the text says why.
        case noProvider(String)
        /// The provider did not deliver `resource` (`settings`, `metadata` or `bundle`): `status` is the provider's status name
        /// (e.g. `HH_ERR_NOT_FOUND`) or "too large" (a document over 4 MiB), `message` the provider's text (may be empty).
        case fetchFailed(resource: String, status: String, message: String)
        /// Fetching `resource` took longer than `hub.download_timeout` (`seconds`), or a sync already running did not end in time.
        case timedOut(resource: String, seconds: Double)
        /// The service's settings document is not valid; the text says why.
        case invalidSettings(String)
        /// The service's metadata document (version, size, SHA-256, signature) is not valid; the text says why.
        case invalidMetadata(String)
        /// The downloaded bundle failed verification or installation (size, SHA-256, signature, older than the active one, not a bundle).
        case rejected(String)
        /// The download could not be written to its temporary file under the hub's directory; the text says why.
        case storage(String)
        /// The bundle transfer broke off after some of its bytes (the connection closed early).
        case truncated(received: Int64, expected: Int64, message: String)
        /// The delivery was closed (`close()`, the host shutting down): the sync was cancelled or not started.
        case closed

        public var description: String {
            switch self {
            case .closed: return "the host is shutting down: no more syncs"
            case .noProvider(let why): return "no content provider: \(why)"
            case .fetchFailed(let resource, let status, let message):
                return "fetching '\(resource)' failed (\(status))\(message.isEmpty ? "" : ": \(message)")"
            case .timedOut(let resource, let seconds): return "fetching '\(resource)' took longer than hub.download_timeout (\(seconds) s)"
            case .invalidSettings(let why): return why
            case .invalidMetadata(let why): return why
            case .rejected(let why): return "the downloaded bundle was rejected: \(why)"
            case .storage(let why): return "the download could not be stored: \(why)"
            case .truncated(let received, let expected, let message):
                return
                    "the bundle download was cut short (truncated): \(received) of \(expected) bytes arrived\(message.isEmpty ? "" : " (the provider said: \(message))")"
            }
        }
    }

    /// Fetches the settings (applying isDisabled and the pilot program), then the metadata, and
    /// installs the service's bundle when it differs from the active one. A sync already running is
    /// joined: the caller gets its result. Failures are logged, posted as an `Error` notification
    /// and thrown; the previous bundle stays active.
    @discardableResult
    public func sync() throws -> SyncReport {
        lock.lock()
        if isClosed {
            lock.unlock()
            throw SyncError.closed
        }
        if inFlight {
            let generation = syncGeneration
            let deadline = Date().addingTimeInterval(hub.settings.downloadTimeout + 30)
            while inFlight && syncGeneration == generation && lock.wait(until: deadline) {}
            let result = syncGeneration == generation ? nil : lastResult
            lock.unlock()
            guard let result else { throw SyncError.timedOut(resource: "a sync already running", seconds: hub.settings.downloadTimeout) }
            return try result.get()
        }
        inFlight = true
        lastAttemptMs = Clock.wallMs()
        lock.unlock()
        return try runClaimedSync()
    }

    /// The sync itself, once this caller set `inFlight` (so close() waits for it).
    private func runClaimedSync() throws -> SyncReport {
        let result: Result<SyncReport, Error>
        hub.setState(\.isDownloadingContent, true)
        do { result = .success(try performSync()) } catch { result = .failure(error) }
        hub.setState(\.isDownloadingContent, false)

        let now = Clock.wallMs()
        updateRecord { record in
            switch result {
            case .success(let report):
                record.lastSuccessMs = now
                record.lastSync = .init(result: report.result, message: report.message, atMs: now, bundleVersion: report.bundleVersion)
            case .failure(let error):
                record.lastSync = .init(result: "failed", message: "\(error)", atMs: now, bundleVersion: nil)
            }
        }
        lock.withLock {
            if case .success = result { lastSuccessThisRunMs = now }
            lastResult = result
            inFlight = false
            syncGeneration += 1
            lock.broadcast()
        }
        switch result {
        case .success(let report):
            pipeline.log(.info, .debug, source: "hub", "content sync: \(report.message)")
        case .failure(SyncError.closed):
            pipeline.log(.info, .debug, source: "hub", "content sync stopped: the host is shutting down")
        case .failure(let error):
            pipeline.log(.error, .debug, source: "hub", "content sync failed: \(error); the active bundle is unchanged")
            hub.notifications.post(HostNotification.Name.error, ["source": "delivery", "message": .string("\(error)")])
        }
        return try result.get()
    }

    /// Stops delivery before the plugins go away (HubHost.shutdown calls it): a running sync is
    /// cancelled (the provider sees is_cancelled between chunks) and waited for, bounded by
    /// hub.download_timeout; later syncs throw `.closed`.
    public func close() {
        lock.lock()
        isClosed = true
        let deadline = Date().addingTimeInterval(hub.settings.downloadTimeout + 5)
        while inFlight && lock.wait(until: deadline) {}
        lock.unlock()
    }

    /// Starts a sync on a background thread unless one is running (stale_ok, recurring).
    public func syncInBackground() {
        let claimed = lock.withLock { () -> Bool in
            guard !inFlight && !isClosed else { return false }
            inFlight = true
            lastAttemptMs = Clock.wallMs()
            return true
        }
        guard claimed else { return }
        Thread.detachNewThread { [self] in _ = try? self.runClaimedSync() }
    }

    // MARK: The modes

    /// Call before presenting. With no active bundle it waits for a sync (on_demand's first
    /// present); with stale content, dont_show_stale waits for a sync while stale_ok and recurring
    /// refresh in the background. Throws the sync's failure when present must wait and it failed.
    public func prepareForPresent() throws {
        guard provider != nil else { return }  // nothing to fetch with: present what is there
        if hub.activeBundle == nil {
            try sync()
            return
        }
        guard isStale else { return }
        switch settings.refreshMode {
        case .dontShowStale: try sync()
        case .staleOK, .recurring: syncInBackground()
        }
    }

    /// As `prepareForPresent()`, for a caller that can show progress instead of waiting (the web
    /// hub's status views): with no active bundle it starts a sync in the background and returns.
    public func prepareForPresent(wait: Bool) throws {
        if !wait, provider != nil, hub.activeBundle == nil {
            syncInBackground()
            return
        }
        try prepareForPresent()
    }

    /// `hubhost serve` start-up: learns the service's modes when none are known yet, then syncs
    /// when the initial download mode is immediate. Logs failures (they are also notifications).
    public func serveStartUp() {
        guard provider != nil else {
            pipeline.log(.info, .debug, source: "hub", "content delivery is off: \(providerProblem ?? "no content_provider instance")")
            return
        }
        if currentRecord().settings == nil {
            do { try refreshSettings() } catch {
                pipeline.log(.warning, .debug, source: "hub", "content service settings not fetched at start-up: \(error)")
            }
        }
        if settings.initialDownloadMode == .immediate { _ = try? sync() }
    }

    /// In `hubhost serve`: true when the service asked for recurring refreshes and refreshInterval
    /// passed since the last sync attempt (or none was made in this run).
    public var isRecurringSyncDue: Bool {
        guard provider != nil else { return false }
        let settings = currentRecord().settings
        return lock.withLock {
            guard let settings, settings.refreshMode == .recurring, !inFlight else { return false }
            guard let last = lastAttemptMs else { return true }
            return Double(Clock.wallMs() - last) / 1000 >= settings.refreshInterval
        }
    }

    // MARK: Steps

    /// Fetches and applies the settings document (with the location query). A provider that has
    /// none (HH_ERR_NOT_FOUND) means the defaults.
    @discardableResult
    package func refreshSettings() throws -> DeliverySettings {
        try refreshSettings(deadline: deadline())
    }

    private func refreshSettings(deadline: UInt64) throws -> DeliverySettings {
        let resource = settingsResource()
        let (status, message, data) = try fetchDocument(resource, deadline: deadline)
        let settings: DeliverySettings
        if status == HH_ERR_NOT_FOUND {
            pipeline.log(.info, .info, source: "hub", "the content provider has no settings document (\(message)): default delivery settings")
            settings = DeliverySettings()
        } else {
            do { settings = try DeliverySettings.parse(data) } catch { throw SyncError.invalidSettings("\(error)") }
        }
        var previous: DeliverySettings?
        let fetched = Clock.wallMs()
        updateRecord { record in
            previous = record.settings
            record.settings = settings
            record.settingsFetchedMs = fetched
        }
        if let old = previous?.pilotProgram?.id, let new = settings.pilotProgram?.id, old != new {
            pipeline.log(.info, .debug, source: "hub", "pilot program reset by the content service ('\(old)' -> '\(new)'): membership re-evaluated")
        }
        apply(settings)
        return settings
    }

    private func performSync() throws -> SyncReport {
        guard let provider else { throw SyncError.noProvider(providerProblem ?? "no content_provider instance is loaded") }
        _ = provider
        let deadline = deadline()
        let settings = try refreshSettings(deadline: deadline)
        if settings.isDisabled {
            return SyncReport(result: "skipped", message: "the content service disabled the Content Hub: nothing downloaded", settings: settings)
        }
        if settings.refusedByPilotProgram {
            return SyncReport(
                result: "skipped", message: "not part of pilot program '\(settings.pilotProgram!.id)': nothing downloaded", settings: settings)
        }
        let (status, message, data) = try fetchDocument(HH_CONTENT_RESOURCE_METADATA, deadline: deadline)
        guard status == HH_OK else {
            throw SyncError.fetchFailed(resource: HH_CONTENT_RESOURCE_METADATA, status: StatusCode.name(status), message: message)
        }
        let metadata: BundleMetadata
        do { metadata = try BundleMetadata.decode(data, source: "the content service's metadata") } catch {
            throw SyncError.invalidMetadata("\(error)")
        }
        let wanted = metadata.sha256.lowercased()
        if let active = hub.activeBundle, activeSHA256(of: active) == wanted {
            return SyncReport(
                result: "current", message: "the active bundle \(metadata.version) is the service's", settings: settings,
                bundleVersion: metadata.version, bundleSHA256: wanted)
        }
        let file = try download(metadata: metadata, deadline: deadline)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let installed: ContentBundle
        do { installed = try hub.install(metadata: metadata, bundleAt: file) } catch { throw SyncError.rejected("\(error)") }
        lock.withLock { activeDigest = (installed.path, wanted) }
        return SyncReport(
            result: "updated", message: "bundle \(metadata.version) downloaded, verified and active", settings: settings,
            bundleVersion: metadata.version, bundleSHA256: wanted)
    }

    /// Streams the bundle into a temporary file under `<data_dir>/hub/downloads`, posting
    /// DownloadProgressChanged at each new whole percent (0 first, 100 last).
    private func download(metadata: BundleMetadata, deadline: UInt64) throws -> String {
        guard let provider else { throw SyncError.noProvider(providerProblem ?? "none") }
        let folder = (hub.directory as NSString).appendingPathComponent("downloads")
        let file = (folder as NSString).appendingPathComponent("bundle-\(UUID().uuidString).part")
        let handle: FileHandle
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            guard FileManager.default.createFile(atPath: file, contents: nil) else { throw SyncError.storage("cannot create \(file)") }
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        } catch let error as SyncError { throw error } catch { throw SyncError.storage("\(file): \(error.localizedDescription)") }
        final class Progress {
            var written: Int64 = 0
            var percent = -1
            var tooLarge = false
            var writeError: String?
        }
        let progress = Progress()
        let expected = max(metadata.size, 0)
        let notifications = hub.notifications
        func post(_ percent: Int) {
            guard percent > progress.percent else { return }
            progress.percent = percent
            notifications.post(HostNotification.Name.downloadProgressChanged, ["percent": .number(Double(percent))])
        }
        post(0)
        let sink = ContentProviderPlugin.Sink(
            write: { bytes in
                guard progress.written + Int64(bytes.count) <= expected else {
                    progress.tooLarge = true
                    return false
                }
                do { try handle.write(contentsOf: bytes) } catch {
                    progress.writeError = "\(error)"
                    return false
                }
                progress.written += Int64(bytes.count)
                return true
            },
            progress: { done, total in
                let whole = total > 0 ? total : UInt64(expected)
                guard whole > 0 else { return }
                post(Int(min(100, done.multipliedReportingOverflow(by: 100).partialValue / whole)))
            },
            isCancelled: { [self] in shouldStop(deadline) })
        let (status, message) = provider.stream(HH_CONTENT_RESOURCE_BUNDLE, into: sink, deadlineSeconds: Self.callDeadline(deadline))
        try? handle.close()
        do {
            if progress.tooLarge { throw SyncError.rejected("the bundle is larger than the metadata's size (\(expected) bytes)") }
            if let why = progress.writeError { throw SyncError.storage("\(file): \(why)") }
            if status != HH_OK {
                if lock.withLock({ isClosed }) { throw SyncError.closed }
                if Clock.monotonicNs() >= deadline {
                    throw SyncError.timedOut(resource: HH_CONTENT_RESOURCE_BUNDLE, seconds: hub.settings.downloadTimeout)
                }
                // Some bytes came, then the transfer failed: say it was cut short, not "unreachable".
                if progress.written > 0, progress.written < expected {
                    throw SyncError.truncated(received: progress.written, expected: expected, message: message)
                }
                throw SyncError.fetchFailed(resource: HH_CONTENT_RESOURCE_BUNDLE, status: StatusCode.name(status), message: message)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: file)
            throw error
        }
        if progress.written == expected { post(100) }
        return file
    }

    /// A small document into memory. HH_OK and HH_ERR_NOT_FOUND are answers; anything else throws.
    private func fetchDocument(_ resource: String, deadline: UInt64) throws -> (Int32, String, Data) {
        guard let provider else { throw SyncError.noProvider(providerProblem ?? "none") }
        final class Buffer {
            var data = Data()
            var tooLarge = false
        }
        let buffer = Buffer()
        let sink = ContentProviderPlugin.Sink(
            write: { bytes in
                guard buffer.data.count + bytes.count <= Self.documentLimit else {
                    buffer.tooLarge = true
                    return false
                }
                buffer.data.append(contentsOf: bytes)
                return true
            },
            isCancelled: { [self] in shouldStop(deadline) })
        let (status, message) = provider.stream(resource, into: sink, deadlineSeconds: Self.callDeadline(deadline))
        let name = String(resource.prefix { $0 != "?" })
        if buffer.tooLarge { throw SyncError.fetchFailed(resource: name, status: "too large", message: "more than \(Self.documentLimit) bytes") }
        if status == HH_OK || status == HH_ERR_NOT_FOUND { return (status, message, buffer.data) }
        if lock.withLock({ isClosed }) { throw SyncError.closed }
        if Clock.monotonicNs() >= deadline { throw SyncError.timedOut(resource: name, seconds: hub.settings.downloadTimeout) }
        throw SyncError.fetchFailed(resource: name, status: StatusCode.name(status), message: message)
    }

    /// `settings` with what the service decides pilot membership from: the location delegate's
    /// location ID (it wins; the service compares it verbatim) or its coordinates.
    func settingsResource() -> String {
        guard let place = location() else { return HH_CONTENT_RESOURCE_SETTINGS }
        // Only unreserved characters stay as they are, so the service decodes the ID verbatim.
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        func encoded(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text }
        if let id = place.locationID, !id.isEmpty {
            return HH_CONTENT_RESOURCE_SETTINGS + "?location_id=" + encoded(id)
        }
        if let latitude = place.latitude, let longitude = place.longitude {
            return HH_CONTENT_RESOURCE_SETTINGS + "?latitude=\(latitude)&longitude=\(longitude)"
        }
        return HH_CONTENT_RESOURCE_SETTINGS
    }

    /// The hub state follows the service's word on the remote disable and the pilot program.
    private func apply(_ settings: DeliverySettings) {
        hub.setState(\.isDisabled, settings.isDisabled)
        hub.setState(\.notPartOfPilotProgram, settings.refusedByPilotProgram)
    }

    /// True once the sync's deadline passed or the host is closing delivery.
    private func shouldStop(_ deadline: UInt64) -> Bool {
        Clock.monotonicNs() >= deadline || lock.withLock { isClosed }
    }

    /// How long a provider call may run when the sync's deadline is `deadline` (monotonic ns): past
    /// it the sink says cancelled, and a plugin that does not stop within 5 s more is given up on.
    static func callDeadline(_ deadline: UInt64) -> Double {
        let now = Clock.monotonicNs()
        return Double(deadline > now ? deadline - now : 0) / 1e9 + 5
    }

    private func deadline() -> UInt64 { Clock.monotonicNs() + SafeTime.durationNs(max(0.001, hub.settings.downloadTimeout)) }

    /// SHA-256 (hex) of the active bundle's file, nil when none is active.
    public var activeBundleSHA256: String? { hub.activeBundle.flatMap(activeSHA256(of:)) }

    private func activeSHA256(of bundle: ContentBundle) -> String? {
        if let known = lock.withLock({ activeDigest }), known.path == bundle.path { return known.sha256 }
        guard let digest = SHA256.hex(ofFile: bundle.path) else { return nil }
        lock.withLock { activeDigest = (bundle.path, digest) }
        return digest
    }
}
