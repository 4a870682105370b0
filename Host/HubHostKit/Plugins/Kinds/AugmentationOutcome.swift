/// What one augmentation call did.
public struct AugmentationOutcome: Equatable, Sendable {
    /// The plugin's hh_status_t: HH_OK (0) keeps its edits, any other drops them. A failed isolated worker
    /// answers HH_ERR_UNAVAILABLE (HH_ERR_TIMEOUT past its `call_timeout`).
    public var status: Int32
    /// The plugin's report_error message when status is not HH_OK.
    public var message: String
    /// The event with the plugin's edits when status is HH_OK; the event as it was otherwise.
    public var event: AugmentableEvent
    /// True when `event` was edited by this process's `EventEditSession`, whose set never appends a
    /// name the event already has: then, when the event's first attributes are the input's, every
    /// attribute after them is a name new to the input and to each other, and applying the edits
    /// needs no search by name. False for an answer read from an isolated worker (not trusted with
    /// that). Not part of the outcome's value (==).
    var appendsOnlyNewNames = false

    init(status: Int32, message: String, event: AugmentableEvent, appendsOnlyNewNames: Bool = false) {
        self.status = status
        self.message = message
        self.event = event
        self.appendsOnlyNewNames = appendsOnlyNewNames
    }

    public static func == (a: AugmentationOutcome, b: AugmentationOutcome) -> Bool {
        a.status == b.status && a.message == b.message && a.event == b.event
    }
}
