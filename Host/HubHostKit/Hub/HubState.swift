/// The Content Hub's public state (the ZBiM SDK's "Reacting to ZBiM SDK State Changes"). More than
/// one may be true at once: content may download while a hub shows older, valid content.
public struct HubState: Codable, Equatable, Sendable {
    /// Metadata or a bundle is being downloaded.
    public var isDownloadingContent = false
    /// A hub session is open (whatever it shows: content, progress or an error).
    public var isDisplayingContentHub = false
    /// A verified bundle is active and can be presented.
    public var isReady = false
    /// The content service disabled the hub remotely.
    public var isDisabled = false
    /// The content service refused this instance a place in its pilot program.
    public var notPartOfPilotProgram = false

    /// Every flag false.
    public init() {}

    /// Each flag with the notification that announces its changes.
    // Safe to share: a constant table (key paths to stored properties, and strings), never changed.
    nonisolated(unsafe) public static let flags: [(keyPath: WritableKeyPath<HubState, Bool>, key: String, notification: String)] = [
        (\.isDownloadingContent, "isDownloadingContent", HostNotification.Name.downloadingContentStateChanged),
        (\.isDisplayingContentHub, "isDisplayingContentHub", HostNotification.Name.displayingContentHubStateChanged),
        (\.isReady, "isReady", HostNotification.Name.readyStateChanged),
        (\.isDisabled, "isDisabled", HostNotification.Name.disabledStateChanged),
        (\.notPartOfPilotProgram, "notPartOfPilotProgram", HostNotification.Name.notPartOfPilotProgramStateChanged)
    ]
}
