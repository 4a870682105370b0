/// The campaign engine's error delegate (Rakuten In-App Messaging's errorDelegate): its warnings and
/// errors, already in the logging pipeline, also go onto the notification stream as `Error`
/// notifications (payload: source, severity, message), so an app watching `/v1/notifications`
/// hears them. It sits behind the pipeline's filter like every destination.
/// Sendable: its one field is a `let` HostNotifications.
final class EngineErrorNotifications: LogDestination, Sendable {
    /// Log sources whose warnings and errors are announced.
    static let sources = ["hubhost.campaigns"]

    private let notifications: HostNotifications

    init(_ notifications: HostNotifications) { self.notifications = notifications }

    func write(_ record: LogRecord) {
        guard record.severity <= .warning, record.severity != .none, Self.sources.contains(record.source) else { return }
        notifications.post(
            HostNotification(
                name: HostNotification.Name.error,
                payload: ["source": .string(record.source), "severity": .string(record.severity.name), "message": .string(record.message)],
                timestampMs: record.timeMs))
    }

    func flush() {}
}
