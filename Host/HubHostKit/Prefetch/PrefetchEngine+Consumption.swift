import Foundation
import GRDB

/// The PCD SDK's recordConsumption: the business contract requires every viewing to be reported.
/// Each record is stored in the catalog (table consumption), marks the item viewed, and becomes a
/// `Prefetch Consumption` event in the event pipeline (attributes: Item ID, Content ID, Source,
/// Start, End, Consumed At), delivered like every other event.
extension PrefetchEngine {
    /// One recorded viewing of an item.
    public struct Consumption: Codable, Sendable, Equatable {
        /// The item's uniqueId.
        public var itemId: String
        /// When it was viewed, in ms since 1970.
        public var atMs: Int64
        /// Where the viewing started, in seconds of play.
        public var start: Double
        /// Where it ended, in seconds of play (not before `start`).
        public var end: Double
    }

    /// The event name consumption records become.
    public static let consumptionEventName = "Prefetch Consumption"
    /// The longest position accepted (a week of playback, in seconds).
    static let maxPosition = 7 * 86_400.0

    /// Stores a consumption of item `id` from `start` to `end` seconds at `date`, marks it viewed
    /// and tracks its event. Refused for positions out of range or end before start.
    public func recordConsumption(_ id: String, date: Date = Date(), start: Double, end: Double) throws -> Consumption {
        guard start.isFinite, end.isFinite, (0...Self.maxPosition).contains(start), (0...Self.maxPosition).contains(end) else {
            throw PrefetchError.invalid("start and end must be seconds between 0 and \(Int(Self.maxPosition))")
        }
        guard end >= start else { throw PrefetchError.invalid("end (\(end)) is before start (\(start))") }
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, (0...253_402_300_799).contains(seconds) else { throw PrefetchError.invalid("the consumption date is out of range") }
        let record = Consumption(itemId: id, atMs: Int64(seconds * 1000), start: start, end: end)
        let item = try store.pool.write { db -> PrefetchItem in
            guard var item = try PrefetchStore.item(db, id) else { throw PrefetchError.unknownItem(id) }
            try db.execute(
                sql:
                    "CREATE TABLE IF NOT EXISTS consumption (item_id TEXT NOT NULL, at_ms INTEGER NOT NULL, start REAL NOT NULL, \"end\" REAL NOT NULL)"
            )
            try db.execute(
                sql: "INSERT INTO consumption (item_id, at_ms, start, \"end\") VALUES (?, ?, ?, ?)",
                arguments: [id, record.atMs, start, end])
            item.viewed = true
            item.updatedMs = Clock.wallMs()
            try PrefetchStore.write(db, item)
            return item
        }
        if let trackEvent {
            try trackEvent(
                Event(
                    type: .namedEvent, name: Self.consumptionEventName,
                    attributes: [
                        .init("Item ID", .string(item.uniqueId)), .init("Content ID", .string(item.contentId)),
                        .init("Source", .string(item.sourceName)),
                        .init("Start", .double(start)), .init("End", .double(end)), .init("Consumed At", .timeMs(record.atMs))
                    ]))
        }
        return record
    }

    /// The consumption records of item `id`, oldest first.
    public func consumptions(_ id: String) throws -> [Consumption] {
        try store.pool.read { db in
            guard try db.tableExists("consumption") else { return [] }
            return try Row.fetchAll(db, sql: "SELECT * FROM consumption WHERE item_id = ? ORDER BY at_ms, rowid", arguments: [id]).map {
                Consumption(itemId: $0["item_id"], atMs: $0["at_ms"], start: $0["start"], end: $0["end"])
            }
        }
    }
}
