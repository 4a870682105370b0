import Foundation

/// The prefetch engine's settings (`prefetch:` in plugins.yaml): the PCD SDK's VocConfig values the
/// integrator chooses, plus where the catalog service and the device conditions come from. The
/// values the catalog service sends at registration (items per category, daily byte limit, largest
/// file, time window, network default) are not here: they are the server policy (PrefetchPolicy).
public struct PrefetchSettings: Sendable, Equatable {
    package static let schema = ConfigSchema(keys: [
        ConfigKey(
            key: "enabled", type: .bool, defaultValue: .bool(false),
            doc: "true turns the prefetch engine on (it is off unless asked for: it downloads on its own)."),
        ConfigKey(
            key: "license", type: .string, defaultValue: .string(""),
            doc: "The licence key sent at registration; the Swift API option or --license wins over it, it wins over HUBHOST_PREFETCH_CONFIG."),
        ConfigKey(
            key: "provider", type: .string, defaultValue: .string(""),
            doc: "The content_provider instance that reaches the catalog service; empty: the first content_provider in plugins:."),
        ConfigKey(
            key: "device_id", type: .string, defaultValue: .string(""),
            doc: "The device id sent at registration; empty: a random id made once and kept in the data directory."),
        ConfigKey(
            key: "max_concurrent_downloads", type: .int, defaultValue: .int(4),
            doc: "Files downloaded at once (the PCD SDK's default is unlimited; a few keep one host from opening hundreds of connections to a CDN).",
            range: .between(1, 64), live: true),
        ConfigKey(
            key: "item_download_behavior", type: .string, defaultValue: .string("full_auto"),
            doc: "full_auto: discovered items download by themselves; thumbnail_only: only their thumbnails; none: only on request.",
            allowedValues: DownloadBehavior.allCases.map(\.rawValue), live: true),
        ConfigKey(
            key: "network_selection", type: .string, defaultValue: .string(""),
            doc: "wifi, cellular or both; empty: the catalog service's default (wifi when it sends none).",
            allowedValues: NetworkSelection.allCases.map(\.rawValue), live: true),
        ConfigKey(key: "enable_auto_purge", type: .bool, defaultValue: .bool(true), doc: "false: hubhost never purges items by itself.", live: true),
        ConfigKey(
            key: "cache_size_limit", type: .int, defaultValue: .int(0),
            doc: "Auto purge evicts items while their files take more bytes than this; 0: no limit (storage_low still applies).",
            range: .between(0, Double(CatalogProtocol.maxFileSize)), live: true),
        ConfigKey(
            key: "sync_interval", type: .duration, defaultValue: .double(900), doc: "How often the catalog is fetched again.",
            range: durationRange, live: true),
        ConfigKey(
            key: "read_timeout", type: .duration, defaultValue: .double(30),
            doc: "The longest a file download may go without receiving a byte before the attempt fails (a hanging server).",
            range: durationRange),
        ConfigKey(
            key: "retry_delay", type: .duration, defaultValue: .double(10),
            doc: "The wait before a failed file download is tried again; doubled on each of the 3 retries.", range: durationRange, live: true),
        ConfigKey(
            key: "lookup_retry_delay", type: .duration, defaultValue: .double(10),
            doc: "The wait between the 3 attempts of a metadata look-up by contentIds when the service cannot be reached (the PCD SDK's 10 s).",
            range: durationRange, live: true),
        ConfigKey(
            key: "register_retry", type: .duration, defaultValue: .double(30),
            doc: "The first wait before registration is tried again after a transport or server failure; doubled each time, at most 1 hour.",
            range: durationRange, live: true),
        ConfigKey(
            key: "requires_charging", type: .bool, defaultValue: .bool(false),
            doc: "true: policy-driven downloads wait while the device is not charging (WorkManager's requiresCharging).", live: true),
        ConfigKey(
            key: "battery_low", type: .double, defaultValue: .double(0.15),
            doc: "Policy-driven downloads wait while the battery is below this level and not charging.", range: .between(0, 1), live: true),
        ConfigKey(
            key: "storage_low", type: .int, defaultValue: .int(512 << 20),
            doc: "Every download waits while the data directory has fewer free bytes than this.",
            range: .between(0, Double(CatalogProtocol.maxFileSize)), live: true),
        ConfigKey(
            key: "device_conditions", type: .string, defaultValue: .string(""),
            doc: "The device_conditions plugin instance that tells network, battery and storage; empty: none (downloads assume an unmetered network)."
        ),
        ConfigKey(
            key: "download_request", type: .string, defaultValue: .string(""),
            doc: "The download_request plugin instance that may rewrite each file request (signed URLs, headers); empty: none.")
    ])

    /// The PCD SDK's itemDownloadBehavior (VOCItemDownloadFullAuto, ThumbnailOnly, None).
    public enum DownloadBehavior: String, Sendable, Codable, CaseIterable {
        /// Policy queues a discovered item and downloads it when the download policy allows.
        case fullAuto = "full_auto"
        /// Policy fetches only the item's thumbnail files; its main files download only when asked.
        case thumbnailOnly = "thumbnail_only"
        /// Policy downloads nothing of the item; it downloads only when asked.
        case none
    }

    /// The PCD SDK's network selection (VOCNetworkSelection...): which networks downloads may use.
    public enum NetworkSelection: String, Sendable, Codable, CaseIterable {
        /// Wifi (or ethernet) only: a cellular network, or a metered wifi, holds downloads with `network_not_allowed`.
        case wifi
        /// Cellular allowed: downloads use any network, as with `both`.
        case cellular
        /// Any network: wifi, ethernet or cellular.
        case both
    }

    package var enabled = false
    package var license: String?
    package var provider: String?
    package var deviceID: String?
    package var maxConcurrentDownloads = 4
    package var itemDownloadBehavior: DownloadBehavior = .fullAuto
    package var networkSelection: NetworkSelection?
    package var enableAutoPurge = true
    package var cacheSizeLimit: Int = 0
    package var syncInterval: Double = 900
    package var readTimeout: Double = 30
    package var retryDelay: Double = 10
    package var registerRetry: Double = 30
    package var lookupRetryDelay: Double = 10
    package var requiresCharging = false
    package var batteryLow = 0.15
    package var storageLow: Int = 512 << 20
    package var deviceConditions: String?
    package var downloadRequest: String?

    /// The plugins.yaml line of each key given (for `config show`).
    package var lines: [String: Int] = [:]

    /// The accepted durations: positive, and small enough for the clock arithmetic they feed.
    static let durationRange = ConfigRange.positive(atMost: SafeTime.maxDurationSeconds)

    package init() {}
}
