import Foundation
import Logging
import Synchronization

/// The Engage SDK's MobileIdentityManager: sets up the recipient of this installation (a mobile user id
/// and an Engage recipient holding it) and checks an identity (columns such as facebook_id) against
/// the database, merging the current recipient into one that already has it. Merges are journaled
/// in IdentityStore and resumed after a failure or crash; see there.
///
/// Blocking (SQLite and XMLAPI calls): call it from the BlockingPool or another thread that may wait.
/// Sendable: every field is a `let` of a Sendable type, and the `exclusive` Mutex serialises setup and checks.
public final class MobileIdentityManager: Sendable {
    /// The `identity:` settings (list ids, column names, generators).
    package let settings: IdentitySettings
    /// The XMLAPI client the setup, check and merge calls go through.
    public let client: XMLAPIClient
    /// The identity and its merge journal (`identity.sqlite`), shared by processes on the data directory.
    public let store: IdentityStore
    let mobileUserIDs: any IdentifierGenerator
    let auditKeys: any IdentifierGenerator
    let logger: Logger
    /// Hears every identity change (the host tracks it as an event).
    let onChange: @Sendable (IdentityChange) -> Void
    private let exclusive = Mutex(())  // one setup or check at a time in this process (exclusively)

    /// How long a setup, check or reset waits for another process's (`identity.lock`): long enough
    /// for a setup with every XMLAPI retry, short enough that a wedged holder is reported.
    static let crossProcessWaitSeconds: TimeInterval = 300

    /// Runs `body` as the only setup, check or reset on this identity: one thread of this process
    /// and one process on the data directory at a time (an flock on `identity.lock` beside
    /// identity.sqlite), so two processes setting up at once add one recipient, not two.
    private func exclusively<T: Sendable>(_ body: () throws -> T) throws -> T {
        try exclusive.withLock { _ in
            let path = ((store.path as NSString).deletingPathExtension as NSString).appendingPathExtension("lock")!
            let file: FileLock
            do { file = try FileLock(path: path, waitSeconds: Self.crossProcessWaitSeconds) } catch {
                throw Failure(description: "another process is setting up or checking this identity: \(error)")
            }
            defer { file.release() }
            return try body()
        }
    }

    /// Errorid of "Recipient is not a member of this list" / no recipient matched (SelectRecipientData).
    public static let notFoundErrorID = 128

    /// Test-only: `HUBHOST_TEST_KILL_AFTER_MERGE_STEP=N` makes the process SIGKILL itself after the
    /// service confirmed merge step N and before the journal marks it done (0: right after the plan
    /// is journaled, before any step is sent). The crash tests use it; nothing else may set it.
    static let killAfterStepVariable = "HUBHOST_TEST_KILL_AFTER_MERGE_STEP"

    /// A manager over `store`; nothing is sent until a call. `onChange` hears every identity change.
    /// `HubHost.identity()` builds the host's manager from plugins.yaml.
    package init(
        settings: IdentitySettings, client: XMLAPIClient, store: IdentityStore, mobileUserIDs: any IdentifierGenerator,
        auditKeys: any IdentifierGenerator, logger: Logger, onChange: @escaping @Sendable (IdentityChange) -> Void = { _ in }
    ) {
        self.settings = settings
        self.client = client
        self.store = store
        self.mobileUserIDs = mobileUserIDs
        self.auditKeys = auditKeys
        self.logger = logger
        self.onChange = onChange
    }

    /// A refused call or a failed XMLAPI step, with what to do.
    public struct Failure: Error, CustomStringConvertible {
        /// The reason, as one line.
        public var description: String
    }

    /// What `identity show` prints.
    public struct Status: Encodable, Sendable {
        /// The Engage recipient id, once set up.
        public var recipientId: String?
        /// The mobile user id, once made or set.
        public var mobileUserId: String?
        /// Whether both ids are present.
        public var isSetUp: Bool
        /// A journaled merge not finished yet, if any.
        public var pendingMerge: IdentityStore.Merge?
    }

    /// The stored identity and any pending merge; reads SQLite only, sends nothing. Throws on a
    /// database error.
    public func status() throws -> Status {
        let identity = try store.identity()
        return Status(
            recipientId: identity.recipientId, mobileUserId: identity.mobileUserId, isSetUp: identity.isSetUp,
            pendingMerge: try store.pendingMerge())
    }

    /// The Engage SDK's `EngageConfig storeMobileUserId`: sets the mobile user id by hand (what an app
    /// does when enableAutoAnonymousTracking is off). Refused once a recipient holds another one.
    public func setMobileUserID(_ id: String) throws {
        guard !id.isEmpty, id.count <= 1024 else { throw Failure(description: "a mobile user id must be 1 to 1024 characters") }
        try exclusively {
            let identity = try store.identity()
            if let current = identity.mobileUserId, !current.isEmpty, current != id, !(identity.recipientId ?? "").isEmpty {
                throw Failure(description: "recipient \(identity.recipientId!) already holds mobile user id \(current); reset the identity first")
            }
            try store.set(mobileUserId: id)
        }
    }

    /// What `setupRecipient` left in place.
    public struct SetupResult: Encodable, Sendable {
        /// The recipient id.
        public var recipientId: String
        /// The mobile user id.
        public var mobileUserId: String
        /// False when both ids were already present ("already set up").
        public var created: Bool
    }

    /// `setupRecipient`: finishes a pending merge, then, unless both ids are present, makes a mobile
    /// user id (when there is none and enableAutoAnonymousTracking is on) and adds a recipient
    /// holding it (AddRecipient with CREATED_FROM), storing its RecipientId.
    public func setupRecipient() throws -> SetupResult {
        try exclusively { try setupLocked() }
    }

    private func setupLocked() throws -> SetupResult {
        _ = try resumeLocked()
        var identity = try store.identity()
        if identity.isSetUp { return SetupResult(recipientId: identity.recipientId!, mobileUserId: identity.mobileUserId!, created: false) }
        try requireList()  // before an id is made: a setup that cannot be sent changes nothing
        if (identity.mobileUserId ?? "").isEmpty {
            guard settings.autoAnonymousTracking else {
                throw Failure(
                    description:
                        "no mobile user id is set and identity.enableAutoAnonymousTracking is false: set one first (hubhost identity setup --mobile-user-id ID)"
                )
            }
            let generated = try mobileUserIDs.generate()
            guard !generated.isEmpty, generated.count <= 1024 else {
                throw Failure(
                    description:
                        "the mobile user id generator (\(mobileUserIDs.name)) gave \(generated.isEmpty ? "an empty id" : "an id over 1024 characters")"
                )
            }
            try store.set(mobileUserId: generated)  // before AddRecipient: a retry reuses it
            identity.mobileUserId = generated
        }
        let mobile = identity.mobileUserId!
        // An AddRecipient whose answer was lost: find that recipient instead of adding a second one.
        if try store.addRecipientSent(), let found = try findRecipient(columns: [(settings.mobileUserIdColumn, mobile)]) {
            return try finishSetup(recipientId: found.recipientId, mobile: mobile)
        }
        var add = try XMLAPIResource(
            XMLAPIOperation.addRecipient, params: [("LIST_ID", settings.listID), ("CREATED_FROM", String(settings.createdFrom))])
        add.addColumns([(settings.mobileUserIdColumn, mobile)])
        try store.setAddRecipientSent(true)
        // AddRecipient is not idempotent: after an answer that was lost (or late, or a 5xx) the
        // service may hold the recipient already, so look for it before sending it again.
        var attempt = 1
        var answer: XMLAPIResult?
        while answer == nil {  // bounded: client.attempts sends at most
            do {
                answer = try client.post(add, resend: false)
            } catch let error as XMLAPIError where error.mayHaveBeenApplied && attempt < client.attempts {
                client.pauseBeforeRetry(attempt, after: error)
                attempt += 1
                if let found = try findRecipient(columns: [(settings.mobileUserIdColumn, mobile)]) {
                    logger.info("AddRecipient's answer was lost; recipient \(found.recipientId) holds mobile user id \(mobile): using it")
                    return try finishSetup(recipientId: found.recipientId, mobile: mobile)
                }
            }
        }
        let result = answer!
        guard let recipientId = result.value(forShortPath: "RecipientId"), !recipientId.isEmpty else {
            throw Failure(description: "AddRecipient succeeded without a RecipientId in its answer")
        }
        return try finishSetup(recipientId: recipientId, mobile: mobile)
    }

    private func finishSetup(recipientId: String, mobile: String) throws -> SetupResult {
        try store.set(recipientId: recipientId)
        try store.setAddRecipientSent(false)
        onChange(IdentityChange(kind: .setUp, recipientId: recipientId, mobileUserId: mobile, mergedRecipientId: nil))
        return SetupResult(recipientId: recipientId, mobileUserId: mobile, created: true)
    }

    /// How a check ended.
    public enum Outcome: String, Encodable, Sendable {
        /// No recipient has the columns (errorid 128): they were added to the current recipient.
        case updatedCurrent = "updated_current"
        /// A recipient without a mobile user id had them: ours moved onto it, the old one was stamped, and we switched to it.
        case mergedIntoRecipientWithoutMobileUserId = "merged_into_recipient_without_mobile_user_id"
        /// A recipient with a mobile user id had them: the old one was stamped, and we adopted both of its ids.
        case mergedIntoRecipientWithMobileUserId = "merged_into_recipient_with_mobile_user_id"
        /// The current recipient is the one that has them: nothing to do.
        case alreadyCurrent = "already_current"
    }

    /// What `checkIdentity` did, and the identity after it.
    public struct CheckResult: Encodable, Sendable {
        /// Which of the four outcomes happened.
        public var outcome: Outcome
        /// The current recipient id after the check.
        public var recipientId: String
        /// The mobile user id after the check.
        public var mobileUserId: String
        /// The recipient merged away (the old current one), for the merge outcomes.
        public var mergedRecipientId: String?
    }

    /// `checkIdentityForIds`: sets up first, then looks for a recipient with ALL of `columns`, and
    /// updates, merges or does nothing (Outcome).
    public func checkIdentity(_ columns: [(String, String)]) throws -> CheckResult {
        guard !columns.isEmpty else { throw Failure(description: "give at least one column to check (NAME=VALUE)") }
        for (name, _) in columns where name.isEmpty { throw Failure(description: "a column name is empty") }
        return try exclusively {
            let setup = try setupLocked()
            let current = setup.recipientId
            guard let found = try findRecipient(columns: columns) else {
                var update = try XMLAPIResource(XMLAPIOperation.updateRecipient, params: [("LIST_ID", settings.listID), ("RECIPIENT_ID", current)])
                update.addColumns(columns)
                try client.post(update)
                onChange(IdentityChange(kind: .updated, recipientId: current, mobileUserId: setup.mobileUserId, mergedRecipientId: nil))
                return CheckResult(outcome: .updatedCurrent, recipientId: current, mobileUserId: setup.mobileUserId)
            }
            if found.recipientId == current {
                return CheckResult(outcome: .alreadyCurrent, recipientId: current, mobileUserId: setup.mobileUserId)
            }
            let merge = try planMerge(old: current, ours: setup.mobileUserId, found: found)
            try runMerge(merge)
            let outcome: Outcome = found.mobileUserId.isEmpty ? .mergedIntoRecipientWithoutMobileUserId : .mergedIntoRecipientWithMobileUserId
            return CheckResult(outcome: outcome, recipientId: merge.newRecipientId, mobileUserId: merge.newMobileUserId, mergedRecipientId: current)
        }
    }

    /// Finishes a pending merge, if there is one; nil when there was none. What `serve` runs at start.
    @discardableResult
    public func resumePendingMerge() throws -> IdentityStore.Merge? {
        try exclusively { try resumeLocked() }
    }

    private func resumeLocked() throws -> IdentityStore.Merge? {
        guard let pending = try store.pendingMerge() else { return nil }
        logger.warning(
            "resuming merge \(pending.id) of recipient \(pending.oldRecipientId) into \(pending.newRecipientId) from the journal (\(pending.steps.filter(\.done).count) of \(pending.steps.count) steps confirmed)"
        )
        try runMerge(pending)
        return pending
    }

    private struct Found {
        var recipientId: String
        var mobileUserId: String
    }

    /// SelectRecipientData with the columns: the recipient that has all of them, nil on errorid 128.
    private func findRecipient(columns: [(String, String)]) throws -> Found? {
        try requireList()
        var select = try XMLAPIResource(XMLAPIOperation.selectRecipientData, params: [("LIST_ID", settings.listID)])
        select.addColumns(columns)
        do {
            let result = try client.post(select)
            guard let id = result.value(forShortPath: "RecipientId"), !id.isEmpty else {
                throw Failure(description: "SelectRecipientData succeeded without a RecipientId in its answer")
            }
            return Found(recipientId: id, mobileUserId: result.column(settings.mobileUserIdColumn) ?? "")
        } catch let error as XMLAPIError where error.errorID == Self.notFoundErrorID {
            return nil
        }
    }

    /// The merge's steps, with every value fixed now (date, audit key) so a resent step is the same request.
    private func planMerge(old: String, ours: String, found: Found) throws -> IdentityStore.Merge {
        let date = Self.mergedDate(Date())
        var steps: [(summary: String, resource: XMLAPIResource)] = []
        func update(_ recipient: String, _ columns: [(String, String)]) throws -> XMLAPIResource {
            var resource = try XMLAPIResource(XMLAPIOperation.updateRecipient, params: [("LIST_ID", settings.listID), ("RECIPIENT_ID", recipient)])
            resource.addColumns(columns)
            return resource
        }
        let stamp: [(String, String)] =
            settings.mergeHistoryInMarketingDatabase
            ? [(settings.mergedRecipientIdColumn, found.recipientId), (settings.mergedDateColumn, date)] : []
        let newMobile: String
        if found.mobileUserId.isEmpty {
            newMobile = ours
            steps.append(
                (
                    "move mobile user id \(ours) onto recipient \(found.recipientId)",
                    try update(found.recipientId, [(settings.mobileUserIdColumn, ours)])
                ))
            steps.append(
                (
                    "clear the mobile user id of recipient \(old)\(stamp.isEmpty ? "" : " and stamp it merged into \(found.recipientId)")",
                    try update(old, [(settings.mobileUserIdColumn, "")] + stamp)
                ))
        } else {
            newMobile = found.mobileUserId
            if !stamp.isEmpty {
                steps.append(("stamp recipient \(old) merged into \(found.recipientId)", try update(old, stamp)))
            }
        }
        if settings.mergeHistoryInAuditRecordTable {
            guard !settings.auditRecordListID.isEmpty else {
                throw Failure(description: "identity.mergeHistoryInAuditRecordTable is true but identity.auditRecordListId is not set")
            }
            let key = try auditKeys.generate()
            guard !key.isEmpty, key.count <= 1024 else {
                throw Failure(description: "the audit record key generator (\(auditKeys.name)) gave an unusable key")
            }
            var audit = try XMLAPIResource(XMLAPIOperation.insertUpdateRelationalTable, params: [("TABLE_ID", settings.auditRecordListID)])
            audit.addRow([
                (settings.string("auditRecordPrimaryKeyColumnName"), key), (settings.string("oldRecipientIdColumnName"), old),
                (settings.string("newRecipientIdColumnName"), found.recipientId), (settings.string("createDateColumnName"), date)
            ])
            steps.append(("audit row \(key): \(old) merged into \(found.recipientId)", audit))
        }
        return try store.beginMerge(
            oldRecipientId: old, newRecipientId: found.recipientId, newMobileUserId: newMobile, mergedDate: date, steps: steps)
    }

    /// Sends every step not yet confirmed, in order, then switches to the new ids.
    private func runMerge(_ merge: IdentityStore.Merge) throws {
        let killAfter = ProcessInfo.processInfo.environment[Self.killAfterStepVariable].flatMap { Int($0) }
        if killAfter == 0 { kill(getpid(), SIGKILL) }
        for step in merge.steps where !step.done {
            do {
                try client.post(step.resource)
            } catch {
                try? store.recordError(merge: merge.id, "step \(step.index) (\(step.summary)): \(error)")
                throw Failure(
                    description:
                        "merge \(merge.id) stopped at step \(step.index) of \(merge.steps.count) (\(step.summary)): \(error). It is journaled and resumes at the next setup or check, or when serve starts"
                )
            }
            if killAfter == step.index { kill(getpid(), SIGKILL) }
            try store.markDone(merge: merge.id, step: step.index)
        }
        try store.complete(merge)
        logger.info("merged recipient \(merge.oldRecipientId) into \(merge.newRecipientId)")
        onChange(
            IdentityChange(
                kind: .merged, recipientId: merge.newRecipientId, mobileUserId: merge.newMobileUserId, mergedRecipientId: merge.oldRecipientId))
    }

    // MARK: The Engage SDK's deprecated anonymous-user calls

    /// The Engage SDK's deprecated `createAnonymousUserToList:`: what setupRecipient does (AddRecipient
    /// and storing the id), so it is that, for the configured list only.
    public func createAnonymousUser(list: String) throws -> SetupResult {
        guard list == settings.listID else {
            throw Failure(
                description:
                    "createAnonymousUserToList is deprecated and maps onto setupRecipient, which uses identity.databaseListId (\(settings.listID.isEmpty ? "not set" : settings.listID)), not list \(list)"
            )
        }
        return try setupRecipient()
    }

    /// The Engage SDK's deprecated `updateAnonymousToPrimaryUser:list:primaryUserColumn:mergeColumn:` is
    /// refused: it linked two recipients through a merge column with no record of a half-done link;
    /// checkIdentity with the primary user's columns does that merge, journaled.
    public func updateAnonymousToPrimaryUser(_ primaryUserId: String, list: String, primaryUserColumn: String, mergeColumn: String) throws -> Never {
        throw Failure(
            description:
                "updateAnonymousToPrimaryUser is deprecated and not supported: it links recipients through a merge column ('\(mergeColumn)') without a journal, so a failure leaves them half linked. Use checkIdentity with the primary user's columns (e.g. \(primaryUserColumn)=\(primaryUserId)): it finds that recipient and merges into it, journaled"
        )
    }

    /// Forgets the ids (a new setup makes a new recipient); refused while a merge is pending unless `force`.
    public func reset(force: Bool = false) throws {
        try exclusively {
            try store.reset(force: force)
            onChange(IdentityChange(kind: .reset, recipientId: nil, mobileUserId: nil, mergedRecipientId: nil))
        }
    }

    /// The Engage host and the recipient list are set (else XMLAPIError.notConfigured: HTTP 503).
    private func requireList() throws {
        guard !settings.host.isEmpty else { throw XMLAPIError.notConfigured("identity.host (the Engage base URL) is not set in plugins.yaml") }
        guard !settings.listID.isEmpty else {
            throw XMLAPIError.notConfigured("identity.databaseListId (the Engage recipient list) is not set in plugins.yaml")
        }
    }

    /// The merged date as Engage date columns take it: MM/dd/yyyy HH:mm:ss, UTC.
    static func mergedDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "MM/dd/yyyy HH:mm:ss"
        return formatter.string(from: date)
    }
}

/// An identity change, tracked as a named event ("Identity Set Up", "Identity Updated", "Identity
/// Merged", "Identity Reset") with the ids as attributes.
public struct IdentityChange: Sendable, Equatable {
    /// What changed; the raw value is the tracked event's name.
    public enum Kind: String, Sendable {
        /// A setup stored the recipient id that AddRecipient gave (or that a lost AddRecipient had made).
        case setUp = "Identity Set Up"
        /// A check added the checked columns to the current recipient (no other recipient had them).
        case updated = "Identity Updated"
        /// A merge completed: the ids switched to the recipient merged into; `mergedRecipientId` is the one merged away.
        case merged = "Identity Merged"
        /// Both ids were forgotten (`reset`); the ids after it are nil.
        case reset = "Identity Reset"
    }

    /// What changed.
    public var kind: Kind
    /// The recipient id after the change.
    public var recipientId: String?
    /// The mobile user id after the change.
    public var mobileUserId: String?
    /// The recipient merged away, for a merge.
    public var mergedRecipientId: String?

    /// The event tracked for it.
    public var event: Event {
        var event = Event(type: .namedEvent, name: kind.rawValue)
        if let mergedRecipientId { event.set("Merged Recipient Id", .string(mergedRecipientId)) }
        return event
    }
}
