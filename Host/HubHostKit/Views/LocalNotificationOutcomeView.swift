/// What handling a local notification did, as the CLI and the HTTP API print it.
public struct LocalNotificationOutcomeView: Codable, Equatable, Sendable {
    public var id: String
    /// False when hubhost did not schedule this notification.
    public var ours: Bool
    public var uri: String?
    public var showAlert: Bool?
    public var message: String?

    public init(_ outcome: LocalNotifications.Outcome) {
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
