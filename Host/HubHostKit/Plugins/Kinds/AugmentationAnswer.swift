import HubHostABI

/// What one in-process call answered, as the augmentation timeline takes it: most calls only
/// append attributes, and those travel alone (one reference copied and released on the way) rather
/// than in an `AugmentationOutcome`, whose copies retained and released its message, the event's
/// id, name and attributes and the appended ones each time (a tenth of the host's work per call).
enum AugmentationAnswer {
    /// HH_OK, and the plugin only appended these attributes to the event it was given: names new
    /// to it and to each other, in the order set (`EventEditSession.appended`).
    case appended([Event.Attribute])
    /// Anything else: an error status, an answer from a worker, or edits beyond appending.
    case outcome(AugmentationOutcome)

    /// The plugin's hh_status_t.
    var status: Int32 {
        switch self {
        case .appended: HH_OK
        case .outcome(let outcome): outcome.status
        }
    }
}
