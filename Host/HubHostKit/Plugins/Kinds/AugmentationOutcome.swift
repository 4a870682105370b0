/// What one augmentation call did.
public struct AugmentationOutcome: Equatable, Sendable {
    public var status: Int32
    /// The plugin's report_error message when status is not HH_OK.
    public var message: String
    /// The event with the plugin's edits when status is HH_OK; the event as it was otherwise.
    public var event: AugmentableEvent
}
