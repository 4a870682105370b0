import Foundation

/// The catalog service's JSON documents (README, "Content prefetch", "The catalog service
/// protocol"). Two resources, asked through the prefetch engine's content_provider instance:
///
///     prefetch/register?license=L&device_id=D             -> RegisterAnswer
///     prefetch/catalog?device_id=D&registration=R&since=C -> CatalogDelta
///     prefetch/items?device_id=D&registration=R&source=S&content_id=A&content_id=B -> LookupAnswer
///
/// Every number is range-checked by `validated()` before the engine uses it.
package enum CatalogProtocol {
    /// The answer to registration: accepted with the server's policy defaults, or refused with a
    /// reason (a refused licence is an answer, not a transport failure: it is not retried).
    package struct RegisterAnswer: Codable, Sendable, Equatable {
        package var registered: Bool
        package var registrationId: String?
        package var reason: String?
        package var policy: ServerPolicy?

        enum CodingKeys: String, CodingKey {
            case registered, reason, policy
            case registrationId = "registration_id"
        }
    }

    /// The server-side policy defaults (the PCD SDK's "default values ... set at the global level").
    package struct ServerPolicy: Codable, Sendable, Equatable {
        /// wifi, cellular or both: the network selection when plugins.yaml and the API set none.
        package var networkSelection: String?
        /// At most this many items of one category are downloaded by policy (0 or absent: no limit).
        package var itemsPerCategory: Int?
        /// At most this many bytes are downloaded by policy per UTC day (absent: no limit).
        package var dailyByteLimit: Int64?
        /// Files larger than this are not downloaded by policy (absent: no limit).
        package var maxFileSize: Int64?
        /// Downloads by policy only between these local times, "HH:MM" (a window may cross midnight).
        package var windowStart: String?
        package var windowEnd: String?

        enum CodingKeys: String, CodingKey {
            case networkSelection = "network_selection", itemsPerCategory = "items_per_category"
            case dailyByteLimit = "daily_byte_limit", maxFileSize = "max_file_size"
            case windowStart = "window_start", windowEnd = "window_end"
        }

        package init() {}
    }

    package struct SourceEntry: Codable, Sendable, Equatable {
        package var name: String
        package var displayName: String?
        package var subscribed: Bool?
        enum CodingKeys: String, CodingKey {
            case name, subscribed
            case displayName = "display_name"
        }
    }

    package struct CategoryEntry: Codable, Sendable, Equatable {
        package var id: String
        package var name: String?
        package var parent: String?
        package var selected: Bool?
        /// Whether the service suggests the category to the user (the PCD SDK's `suggestions:`
        /// filter). The service's to change at every sync; absent: not suggested.
        package var suggested: Bool?
    }

    /// One file of an item. `role`: main, hls_main_index, thumbnail or subtitle.
    package struct FileEntry: Codable, Sendable, Equatable {
        package var role: String
        package var url: String
        package var size: Int64?
        package var sha256: String?
        package var autoDownload: Bool?
        /// The play length in seconds of a main video file, when the service knows it: what turns a
        /// partial download's seconds into bytes (videoPartialDownloadLength).
        package var duration: Double?
        enum CodingKeys: String, CodingKey {
            case role, url, size, sha256, duration
            case autoDownload = "auto_download"
        }
    }

    package struct ItemEntry: Codable, Sendable, Equatable {
        package var uniqueId: String
        package var contentId: String
        package var source: String
        package var categories: [String]
        package var title: String?
        package var summary: String?
        package var shareUrl: String?
        package var type: String?
        /// Seconds since 1970.
        package var expiry: Int64?
        package var sdkMetadataPassthrough: String?
        package var files: [FileEntry]

        enum CodingKeys: String, CodingKey {
            case source, categories, title, summary, type, expiry, files
            case uniqueId = "unique_id", contentId = "content_id", shareUrl = "share_url"
            case sdkMetadataPassthrough = "sdk_metadata_passthrough"
        }
    }

    package struct Tombstones: Codable, Sendable, Equatable {
        package var items: [String]?
        package var categories: [String]?
        package var sources: [String]?
    }

    /// One page of changes since `since`: new or changed objects, ids deleted, the cursor to ask
    /// from next time, and `more` when another page follows at once.
    package struct CatalogDelta: Codable, Sendable, Equatable {
        /// false: the service no longer knows this registration (didBecomeNotRegistered), with `reason`.
        package var registered: Bool?
        package var reason: String?
        package var cursor: String?
        package var more: Bool?
        package var sources: [SourceEntry]?
        package var categories: [CategoryEntry]?
        package var items: [ItemEntry]?
        package var deleted: Tombstones?
    }

    /// The answer to a look-up by contentIds: the items the service knows.
    package struct LookupAnswer: Codable, Sendable, Equatable {
        package var items: [ItemEntry]
    }

    /// A document the service sent that hubhost refuses, with the reason.
    package struct Invalid: Error, CustomStringConvertible {
        package var description: String
    }

    /// Roles a file may have; the main ones decide the item's state.
    static let roles: Set<String> = ["main", "hls_main_index", "thumbnail", "subtitle"]
    static let mainRoles: Set<String> = ["main", "hls_main_index"]
    /// Limits on what one document may hold, so that a broken service cannot fill memory or disk.
    static let maxIdLength = 256
    static let maxFilesPerItem = 64
    static let maxFileSize: Int64 = 1 << 44  // 16 TiB

    /// An id usable as a folder name and a key: 1...256 bytes of letters, digits, '-', '_', '.', ':'
    /// (not "." or "..").
    static func isValidID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= maxIdLength, id != ".", id != ".." else { return false }
        return id.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "-_.:".unicodeScalars.contains($0) }
    }

    static func checkItem(_ item: ItemEntry) throws {
        guard isValidID(item.uniqueId) else { throw Invalid(description: "item unique_id '\(item.uniqueId.prefix(64))' is not a valid id") }
        guard !item.contentId.isEmpty, item.contentId.utf8.count <= maxIdLength else {
            throw Invalid(description: "item \(item.uniqueId): bad content_id")
        }
        guard !item.source.isEmpty else { throw Invalid(description: "item \(item.uniqueId): no source") }
        guard !item.categories.isEmpty else { throw Invalid(description: "item \(item.uniqueId): an item belongs to one or more categories") }
        guard item.files.count <= maxFilesPerItem else { throw Invalid(description: "item \(item.uniqueId): more than \(maxFilesPerItem) files") }
        guard item.files.contains(where: { mainRoles.contains($0.role) }) else {
            throw Invalid(description: "item \(item.uniqueId): no main or hls_main_index file")
        }
        for file in item.files {
            guard roles.contains(file.role) else { throw Invalid(description: "item \(item.uniqueId): unknown file role '\(file.role)'") }
            guard let url = URL(string: file.url), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                throw Invalid(description: "item \(item.uniqueId): file URL '\(file.url.prefix(100))' is not http(s)")
            }
            if let size = file.size, !(0...maxFileSize).contains(size) {
                throw Invalid(description: "item \(item.uniqueId): file size \(size) out of range")
            }
            if let duration = file.duration, !(duration.isFinite && duration > 0 && duration <= 1_000_000) {
                throw Invalid(description: "item \(item.uniqueId): file duration \(duration) out of range (0 < seconds <= 1000000)")
            }
            if let sha = file.sha256, sha.count != 64 || !sha.allSatisfy(\.isHexDigit) {
                throw Invalid(description: "item \(item.uniqueId): sha256 must be 64 hex digits")
            }
        }
        if let expiry = item.expiry, !(0...253_402_300_799).contains(expiry) {
            throw Invalid(description: "item \(item.uniqueId): expiry out of range")
        }
    }

    static func checkPolicy(_ policy: ServerPolicy) throws {
        if let network = policy.networkSelection, PrefetchSettings.NetworkSelection(rawValue: network) == nil {
            throw Invalid(description: "policy network_selection '\(network)': expected wifi, cellular or both")
        }
        if let count = policy.itemsPerCategory, !(0...1_000_000).contains(count) {
            throw Invalid(description: "policy items_per_category \(count) out of range")
        }
        if let bytes = policy.dailyByteLimit, !(0...maxFileSize).contains(bytes) {
            throw Invalid(description: "policy daily_byte_limit \(bytes) out of range")
        }
        if let bytes = policy.maxFileSize, !(0...maxFileSize).contains(bytes) {
            throw Invalid(description: "policy max_file_size \(bytes) out of range")
        }
        for time in [policy.windowStart, policy.windowEnd].compactMap({ $0 }) where PrefetchPolicy.minutes(time) == nil {
            throw Invalid(description: "policy window time '\(time)': expected HH:MM")
        }
        if (policy.windowStart == nil) != (policy.windowEnd == nil) { throw Invalid(description: "policy: window_start and window_end go together") }
    }
}
