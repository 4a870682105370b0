import Foundation

/// The nine item states (seed 4.6, VOCItemState).
public enum PrefetchItemState: String, Sendable, Codable, CaseIterable {
    case discovered, queued, downloading, idle, paused, cached
    case partiallyCached = "partially_cached"
    case failed, deleted
}

/// One content item (seed 4.1 and 4.3, VocItem), as stored. `userInfo` (memory only) lives in the
/// engine, not here.
public struct PrefetchItem: Sendable, Codable, Equatable {
    public var uniqueId: String
    public var contentId: String
    public var sourceName: String
    public var categories: [String]
    public var title: String
    public var summary: String
    public var shareURL: String?
    public var type: String?
    public var state: PrefetchItemState
    /// Why the last download failed or stopped (seed: downloadError).
    public var downloadError: String?
    /// Why a waiting item (discovered, queued, idle, paused) is not downloading now: a
    /// machine-readable code (PrefetchWaitReason), nil when nothing holds it back.
    public var waitReason: String?
    /// When an idle item is tried again (ms since 1970), for waitReason `waiting_to_retry`.
    public var retryAtMs: Int64?
    /// Failed attempts of the current download (a 4th failure, i.e. after 3 retries, is Failed).
    public var attempts: Int
    /// The per-item override of itemDownloadBehavior; nil follows the settings.
    public var downloadBehavior: PrefetchSettings.DownloadBehavior?
    /// Asked for by a user (download, fill): goes ahead of policy-driven downloads.
    public var userInitiated: Bool
    public var bytesDownloaded: Int64
    /// The item's size: its auto-downloaded files' sizes as the catalog gives them (0 when unknown).
    public var size: Int64
    public var files: [PrefetchFile]
    public var persistentUserInfo: [String: JSONValue]
    public var sdkMetadataPassthrough: String?
    public var expiryMs: Int64?
    public var saved: Bool
    public var locked: Bool
    public var viewed: Bool
    public var discoveredMs: Int64
    public var updatedMs: Int64

    /// The seed's read-only `paused`.
    public var paused: Bool { state == .paused }
}

/// One file of an item (VocFile): its role, origin URL, where it is (or will be) on disk.
public struct PrefetchFile: Sendable, Codable, Equatable {
    public var role: String
    /// The file's index among the item's files (its order in the catalog).
    public var index: Int
    public var url: String
    public var size: Int64?
    public var sha256: String?
    public var autoDownload: Bool
    /// The absolute path of the verified file; the partial download is this + ".part".
    public var localPath: String
    public var bytesDownloaded: Int64
    /// Verified and in place.
    public var done: Bool
    /// The validator (ETag, else Last-Modified) of the first answer, sent back as If-Range on resume.
    public var validator: String?
    /// The play length in seconds the catalog gives (main video files), nil when unknown.
    public var duration: Double?
    /// A partial download's target (videoPartialDownloadLength): the first this many bytes of a
    /// main file are enough for the item to be `partially_cached`. nil: the whole file.
    public var partialLength: Int64?
    /// An HLS item's partial download (its `hls_main_index` file): the segments that start before
    /// this many seconds of play are enough for the item to be `partially_cached`. nil: every segment.
    public var partialSeconds: Double? = nil

    /// main and hls_main_index files decide the item's state; thumbnails and subtitles do not.
    public var isMain: Bool { CatalogProtocol.mainRoles.contains(role) }
}

public struct PrefetchCategory: Sendable, Codable, Equatable {
    public var id: String
    public var name: String
    public var parent: String?
    public var selected: Bool
}

public struct PrefetchSource: Sendable, Codable, Equatable {
    public var name: String
    public var displayName: String
    public var subscribed: Bool
}

/// The machine-readable reasons a waiting item gives (README lists them).
public enum PrefetchWaitReason: String, Sendable, Codable, CaseIterable {
    case noNetwork = "no_network"
    case networkNotAllowed = "network_not_allowed"
    case lowBattery = "low_battery"
    case notCharging = "not_charging"
    case storageLow = "storage_low"
    case outsideTimeWindow = "outside_time_window"
    case dailyLimitReached = "daily_limit_reached"
    case fileTooLarge = "file_too_large"
    case categoryLimitReached = "category_limit_reached"
    case notRegistered = "not_registered"
    case pausedByUser = "paused_by_user"
    case waitingToRetry = "waiting_to_retry"
    case downloadBehaviorNone = "download_behavior_none"
    case thumbnailOnly = "thumbnail_only"
    case waitingForSlot = "waiting_for_slot"
    case cancelled
    /// The device_conditions instance failed or is not loaded: hubhost does not guess.
    case deviceConditionsUnavailable = "device_conditions_unavailable"
}
