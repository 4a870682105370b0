import Foundation

/// What content delivery remembers between runs, in `<data_dir>/hub/delivery.json`: the last
/// settings document the service sent (so `hubhost hub status` shows the service's modes and the
/// pilot program offline, and a new process starts with the service's last word on isDisabled and
/// the pilot program) and the outcome of the last sync.
///
/// Every process on the data directory shares it: a change is made by `update` (under an exclusive
/// lock on `delivery.json.lock`, on the record as stored then), and ContentDelivery re-reads the file
/// when its stamp changed, so `hubhost serve` sees the settings and the last sync of a
/// `hubhost hub sync` run beside it.
package struct DeliveryRecord: Codable, Equatable, Sendable {
    /// The last valid settings document; nil until one was fetched (the defaults apply).
    package var settings: DeliverySettings?
    /// When `settings` was fetched (ms since 1970).
    package var settingsFetchedMs: Int64?
    /// The last sync that ended, successful or not.
    package var lastSync: SyncOutcome?
    /// The last sync that succeeded (ms since 1970).
    package var lastSuccessMs: Int64?

    package init() {}

    package struct SyncOutcome: Codable, Equatable, Sendable {
        /// "updated" (a new bundle is active), "current" (the active bundle is the service's),
        /// "skipped" (disabled or not enrolled: nothing downloaded) or "failed".
        package var result: String
        /// What happened, for people (the failure's reason).
        package var message: String
        package var atMs: Int64
        /// The service's bundle version, when its metadata was read.
        package var bundleVersion: String?
    }

    static func path(in hubDirectory: String) -> String { (hubDirectory as NSString).appendingPathComponent("delivery.json") }

    /// The record in `hubDirectory`; an empty record when there is none or it cannot be read.
    static func load(from hubDirectory: String) -> DeliveryRecord {
        guard let data = FileManager.default.contents(atPath: path(in: hubDirectory)),
            let record = try? JSONDecoder().decode(DeliveryRecord.self, from: data)
        else { return DeliveryRecord() }
        return record
    }

    /// The stamp of the record's file now: it changes whenever a process saves the record.
    static func stamp(in hubDirectory: String) -> FileStamp { FileStamp(path: path(in: hubDirectory)) }

    /// Re-reads the record, applies `change` and saves it, holding an exclusive lock so that two
    /// processes' changes (settings fetched by one, a sync ended in another) never overwrite each
    /// other. Returns the record saved and the stamp of the file as written.
    static func update(in hubDirectory: String, _ change: (inout DeliveryRecord) -> Void) throws -> (record: DeliveryRecord, stamp: FileStamp) {
        try FileLocks.exclusively(path(in: hubDirectory) + ".lock") {
            var record = load(from: hubDirectory)
            change(&record)
            try record.save(to: hubDirectory)
            return (record, stamp(in: hubDirectory))
        }
    }

    /// Writes the record atomically (a crash leaves the old or the new one, never half of one).
    func save(to hubDirectory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: URL(fileURLWithPath: DeliveryRecord.path(in: hubDirectory)), options: .atomic)
    }
}
