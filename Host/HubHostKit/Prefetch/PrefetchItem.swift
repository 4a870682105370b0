import Foundation

/// The nine item states (the PCD SDK's VOCItemState).
public enum PrefetchItemState: String, Sendable, Codable, CaseIterable {
    /// New in the catalog, nothing downloaded; also after a files-only `delete`.
    case discovered
    /// Waiting for a download slot: allowed by policy (full_auto), asked for, or an idle item whose retry time came.
    case queued
    /// Claimed by one process, whose download of the files is under way.
    case downloading
    /// An attempt failed (retried after `retry_delay`), its process died, or it was cancelled; queued again later.
    case idle
    /// Paused by the user; left only by a download request.
    case paused
    /// Every main file downloaded and verified (its size, and its sha256 when the catalog gives one).
    case cached
    /// The start of each main file is on disk (a partial download); a later full download resumes it to `cached`.
    case partiallyCached = "partially_cached"
    /// A main file still failed after the retries: `downloadError` says why, the files are removed, no automatic retry.
    case failed
    /// Deleted, evicted by purge or withdrawn by the catalog: files removed, the row kept so the item does not come back.
    case deleted
}

/// One content item (the PCD SDK's VocItem), as stored. `userInfo` (memory only) lives in the
/// engine, not here.
public struct PrefetchItem: Sendable, Codable, Equatable {
    /// The catalog's id for the item (`Provider:ContentId` for an imported item until merged).
    public var uniqueId: String
    /// The content's id within its source.
    public var contentId: String
    /// The source the item belongs to.
    public var sourceName: String
    /// The ids of its categories.
    public var categories: [String]
    /// The title.
    public var title: String
    /// The summary.
    public var summary: String
    /// A URL to share the content by.
    public var shareURL: String?
    /// The content type the catalog gives, e.g. "video".
    public var type: String?
    /// The item's state.
    public var state: PrefetchItemState
    /// Why the last download failed or stopped (the PCD SDK's downloadError).
    public var downloadError: String?
    /// Why a waiting item (discovered, queued, idle, paused) is not downloading now: a
    /// machine-readable code (PrefetchWaitReason), nil when nothing holds it back.
    public var waitReason: String?
    /// When an idle item is tried again (ms since 1970), for waitReason `waiting_to_retry`.
    public var retryAtMs: Int64?
    /// Failed attempts of the current download (a 4th failure, i.e. after 3 retries, is Failed).
    public var attempts: Int
    /// The per-item override of itemDownloadBehavior; nil follows the settings.
    package var downloadBehavior: PrefetchSettings.DownloadBehavior?
    /// Asked for by a user (download, fill): goes ahead of policy-driven downloads.
    public var userInitiated: Bool
    /// Bytes of its files on disk (done and partial).
    public var bytesDownloaded: Int64
    /// The item's size: its auto-downloaded files' sizes as the catalog gives them (0 when unknown).
    public var size: Int64
    /// Its files, in catalog order.
    public var files: [PrefetchFile]
    /// App data kept with the item in the catalog (`setPersistentUserInfo`).
    public var persistentUserInfo: [String: JSONValue]
    /// Opaque metadata the catalog passes through to the app.
    public var sdkMetadataPassthrough: String?
    /// When the item expires (ms since 1970); purge evicts it after that.
    public var expiryMs: Int64?
    /// Saved: never purged.
    public var saved: Bool
    /// Locked (e.g. while consumed): never purged or deleted.
    public var locked: Bool
    /// Consumed at least once.
    public var viewed: Bool
    /// When it joined the catalog, in ms since 1970.
    public var discoveredMs: Int64
    /// When it last changed, in ms since 1970 (purge evicts the oldest first).
    public var updatedMs: Int64

    /// The PCD SDK's read-only `paused`: true when the item is Paused.
    public var paused: Bool { state == .paused }
}

/// One file of an item (VocFile): its role, origin URL, where it is (or will be) on disk.
public struct PrefetchFile: Sendable, Codable, Equatable {
    /// main, hls_main_index, thumbnail or subtitle.
    public var role: String
    /// The file's index among the item's files (its order in the catalog).
    public var index: Int
    /// The origin URL.
    public var url: String
    /// The size the catalog gives, if any.
    public var size: Int64?
    /// The SHA-256 the download is checked against, if the catalog gives one.
    public var sha256: String?
    /// Whether policy-driven downloads fetch it.
    public var autoDownload: Bool
    /// The absolute path of the verified file; the partial download is this + ".part".
    public var localPath: String
    /// Bytes of it on disk.
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

/// One catalog category.
public struct PrefetchCategory: Sendable, Codable, Equatable {
    /// The category id.
    public var id: String
    /// The display name.
    public var name: String
    /// The parent category's id, for a subcategory.
    public var parent: String?
    /// Whether the user selected it (the user's choice once the row exists).
    public var selected: Bool
    /// Whether the service suggests it (the service's, updated at every sync).
    public var suggested: Bool = false
}

/// One content source.
public struct PrefetchSource: Sendable, Codable, Equatable {
    /// The source name items refer to.
    public var name: String
    /// The name to show.
    public var displayName: String
    /// Whether the user subscribed to it (the user's choice once the row exists).
    public var subscribed: Bool
}

/// The machine-readable reasons a waiting item gives (README lists them).
public enum PrefetchWaitReason: String, Sendable, Codable, CaseIterable {
    /// No network connection (or the device reports one hubhost does not know); holds every download.
    case noNetwork = "no_network"
    /// Cellular, or a metered wifi, under a wifi-only network selection; holds every download.
    case networkNotAllowed = "network_not_allowed"
    /// The battery is below `battery_low` and not charging; holds policy-driven downloads.
    case lowBattery = "low_battery"
    /// `requires_charging` is on and the device is not charging; holds policy-driven downloads.
    case notCharging = "not_charging"
    /// The device's free bytes are below `storage_low`; holds every download.
    case storageLow = "storage_low"
    /// Outside the server policy's download window (`window_start` to `window_end`, local time); holds policy-driven downloads.
    case outsideTimeWindow = "outside_time_window"
    /// Policy-driven downloads reached the server policy's `daily_byte_limit` for the UTC day.
    case dailyLimitReached = "daily_limit_reached"
    /// A file of the item is larger than the server policy's `max_file_size` (bytes); holds its policy-driven download.
    case fileTooLarge = "file_too_large"
    /// A category of the item already has the server policy's `items_per_category` items queued, downloading or cached by policy.
    case categoryLimitReached = "category_limit_reached"
    /// The engine is not registered with the catalog service.
    case notRegistered = "not_registered"
    /// The item was paused (`pause`); a download request resumes it.
    case pausedByUser = "paused_by_user"
    /// A failed attempt is retried at the item's `retryAtMs`.
    case waitingToRetry = "waiting_to_retry"
    /// The item's download behavior (its own, else `item_download_behavior`) is `none`: downloaded only when asked.
    case downloadBehaviorNone = "download_behavior_none"
    /// The item's download behavior is `thumbnail_only`: its thumbnails are fetched, never its main files by policy.
    case thumbnailOnly = "thumbnail_only"
    /// Queued behind the downloads running (at most `max_concurrent_downloads` in one process).
    case waitingForSlot = "waiting_for_slot"
    /// Cancelled (`cancelCurrentDownloads`): queued again after one `sync_interval`, or at once when asked.
    case cancelled
    /// The device_conditions instance failed or is not loaded: hubhost does not guess.
    case deviceConditionsUnavailable = "device_conditions_unavailable"
}
