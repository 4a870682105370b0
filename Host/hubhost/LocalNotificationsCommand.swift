import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost notifications ...`: push notification payloads received or opened (their events and
/// campaign), and the local notifications the active content bundle schedules.
struct LocalNotificationsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "Notifications: a push notification received or opened; the local notifications the content bundle schedules (due, handle).",
        discussion: """
            `received` and `opened` feed a push notification's payload to the event pipeline (its event, and \
            its CurrentCampaign as the current campaign). `due` and `handle` work on the local notifications \
            of the content bundle: one is due once its time has come, until it is handled, and \
            `hubhost serve` also announces each one once as LocalNotificationDue on GET /v1/notifications.
            """,
        subcommands: [NotificationCommand.Received.self, NotificationCommand.Opened.self, Due.self, Handle.self])

    /// What `--json` prints for a notification and for a handling outcome.
    struct NotificationView: Encodable {
        var id: String
        var fireAtMs: Int64
        var fireAt: String
        var message: String
        var actionURI: String

        init(_ notification: ContentBundle.ScheduledNotification) {
            id = notification.id
            fireAtMs = notification.fireAtMs
            fireAt = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(notification.fireAtMs) / 1000))
            message = notification.message
            actionURI = notification.actionURI
        }
    }

    typealias OutcomeView = LocalNotificationOutcomeView

    struct Due: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "due", abstract: "List the notifications that are due and not handled yet, by time.")

        @OptionGroup var preview: BundlePreviewOption
        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, hub) = try HubEngineAccess.open(manifestOption, preview: preview)
            defer { host.shutdown() }
            let due = try hub.localNotifications.due().map(NotificationView.init)
            if output.json {
                Output.json(due)
                return
            }
            if due.isEmpty {
                print("no local notification is due")
                return
            }
            Output.table(["ID", "FIRE AT", "ACTION", "MESSAGE"], due.map { [$0.id, $0.fireAt, $0.actionURI, $0.message] })
        }
    }

    struct Handle: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "handle",
            abstract: "Handle a local notification the app received: perform its action.",
            discussion: """
                For a notification the content bundle scheduled, prints the URI to present (its action) \
                and tracks "Local Notification Handled"; without --no-alert the app first shows the \
                message as a prompt. Exits 3 when hubhost did not schedule the id: the app handles it.
                """)

        @Argument(help: "The notification id.")
        var id: String

        @Flag(name: .customLong("no-alert"), help: "The user already chose to act (e.g. from the notification bar): no prompt first.")
        var noAlert = false

        @OptionGroup var preview: BundlePreviewOption
        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, hub) = try HubEngineAccess.open(manifestOption, preview: preview)
            defer { host.shutdown() }
            let outcome = try hub.localNotifications.handle(id: id, showAlert: !noAlert)
            if output.json {
                Output.json(OutcomeView(outcome))
            } else {
                switch outcome {
                case .handled(let notification, let uri, let showAlert):
                    if showAlert { print("alert: \(notification.message)") }
                    print("present: \(uri)")
                case .notOurs(let id):
                    print("not ours: '\(id)' was not scheduled by hubhost; the app handles it")
                }
            }
            if case .notOurs = outcome { throw ExitCode.declined }
        }
    }
}
