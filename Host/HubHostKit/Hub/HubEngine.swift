import Foundation
import Logging
import Synchronization

/// The Content Hub engine (the ZBiM SDK rebuilt): the active verified bundle, the hub's state and
/// its notifications, tailoring and presenting. Bundles reach it through a content_provider plugin
/// and are verified and stored by the host before they are activated.
/// Sendable: the hub's state and the active bundle live in the `current` Mutex (installs are also
/// serialised by `installing`); the rest are `let`s of Sendable types.
public final class HubEngine: Sendable {
    /// The `hub:` settings: those the engine was opened with, and the live keys as the last
    /// reload set them (`HubHost.liveReloadKeys`).
    package var settings: HubSettings { liveSettings.current }
    private let liveSettings: LiveSettings<HubSettings>
    /// Where the engine posts state changes and progress (the host's bus).
    public let notifications: HostNotifications
    /// `<data_dir>/hub`: stored bundles, the users database, status view templates.
    public let directory: String
    /// The verified bundles (`<data_dir>/hub/bundles`) and the pointer to the active one.
    public let bundleStore: BundleStore
    let pipeline: LogPipeline
    /// The users, the active user and their tag counts (`<directory>/users.sqlite`).
    public let users: UserStore
    /// Where hub metrics go (HubHost.hub() connects it to the event pipeline) and the entry point.
    public let metrics: HubMetrics
    /// Page views' metrics and profile learning, recorded in order off the request path (the web
    /// hub hands views to it; the host's shutdown waits for it before the event pipeline's last write).
    package let viewRecorder: HubViewRecorder

    /// Called first by `present`: content delivery's rule for presenting (download on demand, wait
    /// for fresh content when stale content may not show). HubHost passes it to `init`, since the
    /// engine knows no provider. The argument is false when the caller shows progress instead of waiting.
    public let beforePresent: (@Sendable (_ wait: Bool) throws -> Void)?

    private struct Current {
        var state = HubState()
        var bundle: ContentBundle?
        /// The stored bundle's SHA-256 (nil for a preloaded or hand-activated bundle).
        var bundleSHA256: String?
        /// The stamp of `active.json` the engine last acted on (nil: never read).
        var seenStamp: FileStamp?
        /// False once a bundle was activated by hand (`activate`, e.g. a `--bundle` preview): the
        /// engine then stays on it instead of following the store, until the next install.
        var followsStore = true
    }
    private let current = Mutex(Current())

    /// Opens (creating) `<dataDirectory>/hub` and its stores, and activates the stored bundle or the
    /// preloaded one. Throws when a directory or database cannot be opened. `HubHost.hub()` opens the
    /// host's engine.
    package init(
        settings: HubSettings, dataDirectory: String, notifications: HostNotifications, pipeline: LogPipeline,
        metrics: HubMetrics = HubMetrics(), beforePresent: (@Sendable (_ wait: Bool) throws -> Void)? = nil
    ) throws {
        liveSettings = LiveSettings(settings)
        self.beforePresent = beforePresent
        self.notifications = notifications
        self.pipeline = pipeline
        self.metrics = metrics
        directory = (dataDirectory as NSString).appendingPathComponent("hub")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        users = try UserStore(path: (directory as NSString).appendingPathComponent("users.sqlite"))
        bundleStore = try BundleStore(directory: (directory as NSString).appendingPathComponent("bundles"))
        viewRecorder = HubViewRecorder(metrics: metrics, users: users, logger: Logger(label: "hubhost.hub.views", pipeline: pipeline))
        activateStoredOrPreloadedBundle()
    }

    // MARK: State

    /// The hub's state flags now; any thread.
    public var state: HubState { current.withLock { $0.state } }

    /// Changes one state flag; a change (and only a change) is announced by its notification.
    public func setState(_ keyPath: WritableKeyPath<HubState, Bool>, _ value: Bool) {
        let changed: Bool = current.withLock { current in
            guard current.state[keyPath: keyPath] != value else { return false }
            current.state[keyPath: keyPath] = value
            return true
        }
        guard changed, let flag = HubState.flags.first(where: { $0.keyPath == keyPath }) else { return }
        notifications.post(flag.notification, [flag.key: .bool(value)])
    }

    // MARK: The active bundle

    /// The active, verified bundle; nil until one was activated. When another process (e.g.
    /// `hubhost hub sync` beside `hubhost serve`) activated a bundle since, it is opened first: the
    /// engine checks the store's `active.json` stamp (one stat) on every read.
    public var activeBundle: ContentBundle? {
        followStore()
        return current.withLock { $0.bundle }
    }

    /// Makes `bundle` the one presented from now on (the caller verified it). Hub sessions already
    /// open keep the bundle they started with. A bundle activated this way stays active until the
    /// next install (bundles other processes activate meanwhile are not followed).
    public func activate(_ newBundle: ContentBundle) {
        setActive(newBundle, sha256: nil, stamp: nil, follow: false)
    }

    private func setActive(_ newBundle: ContentBundle, sha256: String?, stamp: FileStamp?, follow: Bool) {
        current.withLock { current in
            current.bundle = newBundle
            current.bundleSHA256 = sha256
            if let stamp { current.seenStamp = stamp }
            current.followsStore = follow
        }
        setState(\.isReady, true)
    }

    /// Opens the bundle `active.json` names when it changed since the engine last read it (another
    /// process installed one). A stored bundle that cannot be opened (damaged) is logged once and
    /// the current bundle stays.
    func followStore() {
        let stamp = bundleStore.activeStamp()
        guard current.withLock({ $0.followsStore && stamp != $0.seenStamp }) else { return }
        installing.withLock { _ in
            guard current.withLock({ $0.followsStore && stamp != $0.seenStamp }) else { return }  // another thread did
            let active = current.withLock { $0.bundleSHA256 }
            if let pointer = bundleStore.activePointer(), pointer.sha256 == active {
                current.withLock { $0.seenStamp = stamp }
                return
            }
            do {
                guard let opened = try bundleStore.openActive() else {
                    current.withLock { $0.seenStamp = stamp }
                    return
                }
                setActive(opened.bundle, sha256: opened.sha256, stamp: opened.stamp, follow: true)
                pipeline.log(
                    .info, .info, source: "hub",
                    "content bundle \(opened.bundle.metadata.version) was activated by another process; now presenting it (\(opened.bundle.path))")
            } catch {
                current.withLock { $0.seenStamp = stamp }
                pipeline.log(.error, .debug, source: "hub", "\(error)")
            }
        }
    }

    /// Verifies the bundle at `path` against `metadata` with `hub.public_key`, stores it, makes it the
    /// active bundle and returns it. Throws BundleRejection (its `reason` is for people) when any
    /// check fails; the bundle active before stays active.
    @discardableResult
    package func install(metadata: BundleMetadata, bundleAt path: String) throws -> ContentBundle {
        try installed { try bundleStore.installOpened(bundleAt: path, metadata: metadata, publicKeyPath: settings.publicKeyPath) }
    }

    /// The same for bundle bytes already in memory (e.g. a download).
    @discardableResult
    package func install(metadata: BundleMetadata, bundleData data: Data) throws -> ContentBundle {
        try installed { try bundleStore.installOpened(data, metadata: metadata, publicKeyPath: settings.publicKeyPath) }
    }

    /// Store and activate happen under one lock (with following the store), so two installs racing
    /// (a download and a local provider) leave the engine on the bundle `active.json` names.
    private let installing = Mutex(())

    private func installed(_ store: () throws -> BundleStore.Opened) throws -> ContentBundle {
        do {
            let bundle = try installing.withLock { _ in
                let opened = try store()
                setActive(opened.bundle, sha256: opened.sha256, stamp: opened.stamp, follow: true)
                return opened.bundle
            }
            pipeline.log(.info, .info, source: "hub", "content bundle \(bundle.metadata.version) installed and active (\(bundle.path))")
            return bundle
        } catch let rejection as BundleRejection {
            pipeline.log(.error, .debug, source: "hub", "\(rejection); the active bundle is unchanged")
            throw rejection
        }
    }

    /// At start: the stored active bundle; when there is none (or it is damaged), the preloaded
    /// bundle. A preloaded bundle with a metadata document beside it (`<file>.json`) must pass the
    /// same checks as a download; one without is trusted as shipped with the app (it is as trusted
    /// as the app's own files) and only has to be a bundle.
    private func activateStoredOrPreloadedBundle() {
        let stamp = bundleStore.activeStamp()
        current.withLock { $0.seenStamp = stamp }  // a later change is followed (activeBundle)
        do {
            if let stored = try bundleStore.openActive() {
                setActive(stored.bundle, sha256: stored.sha256, stamp: stored.stamp, follow: true)
                pipeline.log(.info, .debug, source: "hub", "active content bundle \(stored.bundle.metadata.version) (\(stored.bundle.path))")
                return
            }
        } catch {
            pipeline.log(.error, .debug, source: "hub", "\(error)")
        }
        guard var preloaded = settings.preloadedBundle, !preloaded.isEmpty else { return }
        do {
            if PreloadedContentFolder.isFolder(preloaded) {
                preloaded = try PreloadedContentFolder.bundle(
                    for: preloaded, cacheDirectory: (directory as NSString).appendingPathComponent("preloaded"))
            }
            let metadataPath = BundleMetadata.path(besideBundle: preloaded)
            if FileManager.default.fileExists(atPath: metadataPath) {
                let metadata = try BundleMetadata.read(path: metadataPath)
                let data = try Data(contentsOf: URL(fileURLWithPath: preloaded), options: .mappedIfSafe)
                try BundleVerifier.verify(data, metadata: metadata, publicKeyPath: settings.publicKeyPath)
            }
            let bundle = try ContentBundle(path: preloaded)
            setActive(bundle, sha256: nil, stamp: nil, follow: true)
            pipeline.log(.info, .debug, source: "hub", "preloaded content bundle \(bundle.metadata.version) (\(preloaded))")
        } catch {
            pipeline.log(.error, .debug, source: "hub", "the preloaded bundle \(preloaded) is not used: \(error)")
        }
    }

    // MARK: Presenting

    /// Why the hub cannot be presented.
    public enum PresentError: Error, Equatable, CustomStringConvertible {
        /// The content service disabled the Content Hub (its settings' remote disable).
        case disabled
        /// The content service runs a pilot program that did not enroll this instance.
        case notPartOfPilotProgram
        /// No verified content bundle is active yet (none installed, and no usable preloaded bundle).
        case noContent
        /// What was asked for is not in the active bundle; the text names it (a URI, a source URL, "a hub" for a bundle without hubs).
        case notFound(String)

        /// What the user or integrator is told.
        public var description: String {
            switch self {
            case .disabled: return "the Content Hub was disabled by the content service"
            case .notPartOfPilotProgram: return "not part of pilot program: the content service did not enroll this instance"
            case .noContent: return "no verified content bundle is active yet"
            case .notFound(let what): return "\(what) is not in the active content bundle"
            }
        }
    }

    /// The presentation for `counts` (the active user's tag counts), a tags override, or a URI
    /// override (`zbimdb://hub|channel|article/<id>`): the hub that holds the item, with the item as
    /// the target.
    public func presentation(counts: [String: Int], tags: [String]? = nil, uri: ContentURI? = nil) throws -> Presentation {
        try presentation(counts: counts, tags: tags, uri: uri, from: activeBundle)
    }

    /// `presentation(counts:tags:uri:)` from one bundle read once (the active one may change meanwhile).
    func presentation(counts: [String: Int], tags: [String]?, uri: ContentURI?, from bundle: ContentBundle?) throws -> Presentation {
        let current = state
        if current.isDisabled { throw PresentError.disabled }
        if current.notPartOfPilotProgram { throw PresentError.notPartOfPilotProgram }
        guard let bundle else { throw PresentError.noContent }
        let effective = tags.map(Tailoring.counts(forOverride:)) ?? counts
        var hubID: String?
        if let uri {
            switch uri.kind {
            case .hub: hubID = bundle.hub(uri.id)?.id
            case .channel: hubID = bundle.channel(uri.id)?.hubID
            case .article: hubID = bundle.article(uri.id).flatMap { bundle.channel($0.channelID) }?.hubID
            }
            guard hubID != nil else { throw PresentError.notFound(uri.description) }
        }
        guard let presentation = Presentation(bundle: bundle, counts: effective, hubID: hubID, target: uri) else {
            throw PresentError.notFound("a hub")
        }
        return presentation
    }
}

extension HubEngine {
    /// Applies a reload's `hub:` section, whose changes are live keys only (`HubHost.reload`
    /// checks): downloads from now on have the new download_timeout, and hub pages are served with
    /// the new page settings (WebContentHub reads them per request).
    package func applyLiveSettings(_ new: HubSettings) {
        liveSettings.replace(new)
    }
}
