/// What handling a local notification did, as the CLI and the HTTP API print it.
package struct LocalNotificationOutcomeView: Codable, Equatable, Sendable {
    package var id: String
    /// False when hubhost did not schedule this notification.
    package var ours: Bool
    package var uri: String?
    package var showAlert: Bool?
    package var message: String?

    package init(_ outcome: LocalNotifications.Outcome) {
        switch outcome {
        case .handled(let notification, let uri, let showAlert):
            id = notification.id
            ours = true
            self.uri = uri
            self.showAlert = showAlert
            message = notification.message
        case .notOurs(let id):
            self.id = id
            ours = false
        }
    }
}
