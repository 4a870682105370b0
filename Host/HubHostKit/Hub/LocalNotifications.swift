import Foundation
import GRDB

/// The active bundle's scheduled local notifications (the SDK's "Local Notifications"): each becomes
/// due at its time, is announced once as `LocalNotificationDue` on the host's notification bus, and
/// when the app hands it back (`handle`), hubhost performs its action: its action URI becomes the URI
/// to present, and "Local Notification Handled" is tracked. An id hubhost did not schedule answers
/// `.notOurs`, so the app handles it itself.
///
/// What was announced and handled is kept in a small table of the users database, so a restart
/// neither announces again nor forgets what was handled.
public struct LocalNotifications: Sendable {
    /// A notification the active bundle schedules: id, due time (ms since 1970), message and action URI.
    public typealias ScheduledNotification = ContentBundle.ScheduledNotification

    /// What handling a notification did.
    public enum Outcome: Equatable, Sendable {
        /// Ours: present `uri` (the action URI). With `showAlert`, the app shows `message` as a prompt
        /// first and presents only when the user accepts.
        case handled(notification: ScheduledNotification, uri: String, showAlert: Bool)
        /// Not scheduled by hubhost (not in the active bundle): the app handles it.
        case notOurs(id: String)
    }

    let engine: HubEngine

    /// Notifications whose time has come (`fireAtMs <= now`) and that were not handled yet, by time.
    public func due(now: Int64 = Clock.wallMs()) throws -> [ScheduledNotification] {
        guard let bundle = engine.activeBundle else { return [] }
        let handled = try log { db in try String.fetchSet(db, sql: "SELECT id FROM local_notifications WHERE handled_ms IS NOT NULL") }
        return bundle.notifications.filter { $0.fireAtMs <= now && !handled.contains($0.id) }
    }

    /// Posts `LocalNotificationDue` for each due notification not announced before (once each, across
    /// restarts); returns those it announced. `hubhost serve` calls it periodically.
    @discardableResult
    public func announceDue(now: Int64 = Clock.wallMs()) throws -> [ScheduledNotification] {
        let due = try due(now: now)
        guard !due.isEmpty else { return [] }
        let fresh: [ScheduledNotification] = try log { db in
            let announced = try String.fetchSet(db, sql: "SELECT id FROM local_notifications WHERE announced_ms IS NOT NULL")
            let fresh = due.filter { !announced.contains($0.id) }
            for notification in fresh {
                try db.execute(
                    sql: """
                        INSERT INTO local_notifications (id, announced_ms) VALUES (?, ?)
                        ON CONFLICT(id) DO UPDATE SET announced_ms = excluded.announced_ms
                        """, arguments: [notification.id, now])
            }
            return fresh
        }
        for notification in fresh {
            engine.notifications.post(HostNotification.Name.localNotificationDue, LocalNotifications.payload(notification))
        }
        return fresh
    }

    /// Handles a notification the app received (the SDK's handleLocalNotification:showAlert:). Ours:
    /// marked handled, "Local Notification Handled" tracked, and the outcome carries the URI to
    /// present. Not ours: `.notOurs`, nothing recorded.
    public func handle(id: String, showAlert: Bool = true, now: Int64 = Clock.wallMs()) throws -> Outcome {
        guard let notification = engine.activeBundle?.notifications.first(where: { $0.id == id }) else { return .notOurs(id: id) }
        try log { db in
            try db.execute(
                sql: """
                    INSERT INTO local_notifications (id, handled_ms) VALUES (?, ?)
                    ON CONFLICT(id) DO UPDATE SET handled_ms = excluded.handled_ms
                    """, arguments: [id, now])
        }
        engine.metrics.localNotificationHandled(notification, showAlert: showAlert)
        return .handled(notification: notification, uri: notification.actionURI, showAlert: showAlert)
    }

    /// The payload of a `LocalNotificationDue` notification.
    public static func payload(_ notification: ScheduledNotification) -> [String: JSONValue] {
        [
            "id": .string(notification.id), "message": .string(notification.message), "action_uri": .string(notification.actionURI),
            "fire_at_ms": .number(Double(notification.fireAtMs))
        ]
    }

    private func log<T>(_ work: (Database) throws -> T) throws -> T {
        try engine.users.pool.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS local_notifications (id TEXT PRIMARY KEY NOT NULL, announced_ms INTEGER, handled_ms INTEGER)
                    """)
            return try work(db)
        }
    }
}

extension HubEngine {
    /// The active bundle's local notifications: due, announced, handled.
    public var localNotifications: LocalNotifications { LocalNotifications(engine: self) }
}
