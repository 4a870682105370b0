import Foundation
import GRDB

/// The mobile identity and the merge journal, in `<data_dir>/identity.sqlite` (opened with
/// SharedSQLite: WAL, synchronous FULL, shared by the processes on one data directory).
///
/// The Engage SDK warns that its merge "is not currently transactional". hubhost journals it: the whole
/// plan (every XMLAPI request, with the values fixed at planning: the merged date, the audit row's
/// key) is written in one transaction before the first request is sent; a step is marked done only
/// after the service confirmed it; the local switch to the new ids commits in the same transaction
/// that closes the merge. A crash anywhere leaves a pending merge that the next setup, check or
/// `serve` start resumes from its first step not marked done; every step is safe to send twice.
/// Sendable: `path` and `pool` are `let`s, and GRDB's DatabasePool is thread-safe (it serialises
/// writes and hands each read its own connection).
public final class IdentityStore: Sendable {
    /// The SQLite file of the store, `<data_dir>/identity.sqlite` when `HubHost` opens it; `identity.lock` is made beside it.
    public let path: String
    let pool: DatabasePool

    /// The ids as stored.
    public struct Identity: Codable, Equatable, Sendable {
        /// The Engage recipient id that AddRecipient (or a completed merge) gave this installation; nil before setup and after a reset.
        public var recipientId: String?
        /// The mobile user id of this installation (generated or set), stored before AddRecipient is sent; nil before setup and after a reset.
        public var mobileUserId: String?
        /// "Already set up": both ids are present.
        public var isSetUp: Bool { !(recipientId ?? "").isEmpty && !(mobileUserId ?? "").isEmpty }
    }

    /// A merge in the journal.
    public struct Merge: Codable, Equatable, Sendable {
        /// The merge's number in the journal (increasing), as `hubhost identity show` and the errors name it.
        public var id: Int64
        /// The recipient merged away: the current one when the merge was planned.
        public var oldRecipientId: String
        /// The recipient merged into (the one found holding the checked columns); the current one once the merge completes.
        public var newRecipientId: String
        /// The mobile user id once the merge completes: ours, moved onto the new recipient, or the one it already had.
        public var newMobileUserId: String
        /// The merged date written to the old recipient and the audit row (fixed at planning).
        public var mergedDate: String
        /// The XMLAPI requests of the plan, in the order they are sent.
        public var steps: [Step]
        /// Whether every step was confirmed and the ids switched; false while the merge is pending.
        public var completed: Bool
        /// Why the last attempt stopped (the step and the error); nil when none failed, cleared when the merge completes.
        public var lastError: String?
    }

    /// One XMLAPI request of a merge, journaled with its values fixed so that sending it again sends the same request.
    public struct Step: Codable, Equatable, Sendable {
        /// The step's position in its merge, from 1.
        public var index: Int
        /// What the step does, in words ("stamp recipient … merged into …"), as `identity show` and the errors put it.
        public var summary: String
        /// The request sent for the step.
        public var resource: XMLAPIResource
        /// Whether the service confirmed the step; a resumed merge sends only the steps not done.
        public var done: Bool
    }

    /// A store call refused because it would leave the journal inconsistent: a reset or a new merge while one is pending,
    /// or completing a merge with steps not confirmed. Its description says why and what to do.
    public struct Refused: Error, CustomStringConvertible {
        public var description: String
    }

    /// Opens the store at `path`, creating the file and its tables when missing (one process at a time, so that processes
    /// opening a fresh data directory together migrate it once). Throws when the file cannot be opened or migrated.
    public init(path: String) throws {
        self.path = path
        let opening = try SharedSQLite.openingLock(for: path)  // until migrated: see openingLock
        defer { opening.release() }
        pool = try SharedSQLite.open(path: path, label: "identity")
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 identity") { db in
            try db.execute(
                sql: """
                    CREATE TABLE identity (
                        slot INTEGER PRIMARY KEY CHECK (slot = 1),
                        recipient_id TEXT,
                        mobile_user_id TEXT,
                        add_recipient_sent INTEGER NOT NULL DEFAULT 0,
                        updated_ms INTEGER NOT NULL
                    );
                    CREATE TABLE merges (
                        id INTEGER PRIMARY KEY,
                        old_recipient_id TEXT NOT NULL,
                        new_recipient_id TEXT NOT NULL,
                        new_mobile_user_id TEXT NOT NULL,
                        merged_date TEXT NOT NULL,
                        created_ms INTEGER NOT NULL,
                        completed_ms INTEGER,
                        last_error TEXT
                    );
                    CREATE TABLE merge_steps (
                        merge_id INTEGER NOT NULL REFERENCES merges(id),
                        step INTEGER NOT NULL,
                        summary TEXT NOT NULL,
                        resource TEXT NOT NULL,
                        done_ms INTEGER,
                        PRIMARY KEY (merge_id, step)
                    );
                    """)
        }
        try migrator.migrate(pool)
    }

    /// The stored ids; both nil before the first setup and after a reset. Throws on a database error.
    public func identity() throws -> Identity {
        try pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT recipient_id, mobile_user_id FROM identity WHERE slot = 1") else { return Identity() }
            return Identity(recipientId: row["recipient_id"], mobileUserId: row["mobile_user_id"])
        }
    }

    /// Sets the given ids (nil leaves one as it is).
    public func set(recipientId: String? = nil, mobileUserId: String? = nil) throws {
        try pool.write { db in
            try ensureRow(db)
            if let recipientId {
                try db.execute(sql: "UPDATE identity SET recipient_id = ?, updated_ms = ? WHERE slot = 1", arguments: [recipientId, Clock.wallMs()])
            }
            if let mobileUserId {
                try db.execute(
                    sql: "UPDATE identity SET mobile_user_id = ?, updated_ms = ? WHERE slot = 1", arguments: [mobileUserId, Clock.wallMs()])
            }
        }
    }

    /// Whether an AddRecipient was sent whose answer was never recorded (a crash in between):
    /// setup then looks the recipient up by its mobile user id before adding another.
    public func addRecipientSent() throws -> Bool {
        try pool.read { db in try Bool.fetchOne(db, sql: "SELECT add_recipient_sent FROM identity WHERE slot = 1") ?? false }
    }

    /// Records that an AddRecipient is about to be sent (true) or that its answer was stored (false); see `addRecipientSent()`.
    public func setAddRecipientSent(_ sent: Bool) throws {
        try pool.write { db in
            try ensureRow(db)
            try db.execute(sql: "UPDATE identity SET add_recipient_sent = ? WHERE slot = 1", arguments: [sent])
        }
    }

    /// Forgets both ids. Refused while a merge is pending (it would be left half done) unless `force`,
    /// which also drops the pending merge from the journal.
    public func reset(force: Bool) throws {
        try pool.write { db in
            if let pending = try Int64.fetchOne(db, sql: "SELECT id FROM merges WHERE completed_ms IS NULL LIMIT 1") {
                guard force else {
                    throw Refused(
                        description:
                            "merge \(pending) is pending in the journal (see hubhost identity show); a reset now would leave two recipients half merged. Run a setup or check to finish it, or reset --force to drop it"
                    )
                }
                try db.execute(sql: "DELETE FROM merge_steps WHERE merge_id IN (SELECT id FROM merges WHERE completed_ms IS NULL)")
                try db.execute(sql: "DELETE FROM merges WHERE completed_ms IS NULL")
            }
            try db.execute(sql: "DELETE FROM identity")
        }
    }

    /// Journals a merge: the plan and all its steps in one transaction. Refused when another merge
    /// is pending (from this process or another on the same data directory).
    package func beginMerge(
        oldRecipientId: String, newRecipientId: String, newMobileUserId: String, mergedDate: String,
        steps: [(summary: String, resource: XMLAPIResource)]
    ) throws -> Merge {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let id: Int64 = try pool.write { db in
            if let pending = try Int64.fetchOne(db, sql: "SELECT id FROM merges WHERE completed_ms IS NULL LIMIT 1") {
                throw Refused(description: "merge \(pending) is still pending in the journal; it is finished first")
            }
            try db.execute(
                sql: "INSERT INTO merges (old_recipient_id, new_recipient_id, new_mobile_user_id, merged_date, created_ms) VALUES (?, ?, ?, ?, ?)",
                arguments: [oldRecipientId, newRecipientId, newMobileUserId, mergedDate, Clock.wallMs()])
            let id = db.lastInsertedRowID
            for (index, step) in steps.enumerated() {
                try db.execute(
                    sql: "INSERT INTO merge_steps (merge_id, step, summary, resource) VALUES (?, ?, ?, ?)",
                    arguments: [id, index + 1, step.summary, String(decoding: try encoder.encode(step.resource), as: UTF8.self)])
            }
            return id
        }
        guard let merge = try merge(id) else { throw Refused(description: "merge \(id) vanished from the journal") }
        return merge
    }

    /// The pending merge, if any (there is at most one).
    public func pendingMerge() throws -> Merge? {
        guard let id = try pool.read({ db in try Int64.fetchOne(db, sql: "SELECT id FROM merges WHERE completed_ms IS NULL ORDER BY id LIMIT 1") })
        else { return nil }
        return try merge(id)
    }

    /// The merges in the journal, newest first (at most `limit`).
    public func merges(limit: Int = 20) throws -> [Merge] {
        let ids = try pool.read { db in try Int64.fetchAll(db, sql: "SELECT id FROM merges ORDER BY id DESC LIMIT ?", arguments: [max(0, limit)]) }
        return try ids.compactMap { try merge($0) }
    }

    func merge(_ id: Int64) throws -> Merge? {
        try pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM merges WHERE id = ?", arguments: [id]) else { return nil }
            let steps = try Row.fetchAll(
                db, sql: "SELECT step, summary, resource, done_ms FROM merge_steps WHERE merge_id = ? ORDER BY step", arguments: [id]
            )
            .map { step -> Step in
                let text: String = step["resource"]
                let resource = try JSONDecoder().decode(XMLAPIResource.self, from: Data(text.utf8))
                return Step(index: step["step"], summary: step["summary"], resource: resource, done: (step["done_ms"] as Int64?) != nil)
            }
            return Merge(
                id: id, oldRecipientId: row["old_recipient_id"], newRecipientId: row["new_recipient_id"],
                newMobileUserId: row["new_mobile_user_id"], mergedDate: row["merged_date"], steps: steps,
                completed: (row["completed_ms"] as Int64?) != nil, lastError: row["last_error"])
        }
    }

    /// Marks a step confirmed by the service.
    public func markDone(merge: Int64, step: Int) throws {
        try pool.write { db in
            try db.execute(
                sql: "UPDATE merge_steps SET done_ms = ? WHERE merge_id = ? AND step = ? AND done_ms IS NULL",
                arguments: [Clock.wallMs(), merge, step])
        }
    }

    /// Stores `error` as the merge's `lastError` (the step that failed and why); the merge stays pending.
    public func recordError(merge: Int64, _ error: String) throws {
        try pool.write { db in try db.execute(sql: "UPDATE merges SET last_error = ? WHERE id = ?", arguments: [error, merge]) }
    }

    /// Closes a merge whose steps are all done and switches to the new ids, in one transaction.
    public func complete(_ merge: Merge) throws {
        try pool.write { db in
            let open =
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM merge_steps WHERE merge_id = ? AND done_ms IS NULL", arguments: [merge.id]) ?? 0
            guard open == 0 else { throw Refused(description: "merge \(merge.id) still has \(open) step(s) not confirmed") }
            try ensureRow(db)
            try db.execute(
                sql: "UPDATE identity SET recipient_id = ?, mobile_user_id = ?, updated_ms = ? WHERE slot = 1",
                arguments: [merge.newRecipientId, merge.newMobileUserId, Clock.wallMs()])
            try db.execute(
                sql: "UPDATE merges SET completed_ms = ?, last_error = NULL WHERE id = ? AND completed_ms IS NULL",
                arguments: [Clock.wallMs(), merge.id])
        }
    }

    private func ensureRow(_ db: Database) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO identity (slot, updated_ms) VALUES (1, ?)", arguments: [Clock.wallMs()])
    }
}
