import Foundation

/// Engage "Current Campaigns": a URL or notification carrying the CurrentCampaign parameter (name
/// configurable) makes it the current campaign; it is added as "Campaign Name" to every later event
/// until CampaignEndTimeStamp (epoch seconds, GMT) or, without one, the default expiration (1 day).
/// An end time already in the past never activates the campaign. "Last Campaign" keeps the
/// previous one. The state is persisted with the events.
final class CampaignAttribution {
    struct State: Codable {
        var current: String?
        var expiresAtMs: Int64?
        var last: String?
    }

    let settings: EventSettings
    private let state: KeyValueState
    /// Read once; changes (rare: a new campaign, an expiry) are written at once.
    private var cached: State?

    init(settings: EventSettings, state: KeyValueState) throws {
        self.settings = settings
        self.state = state
        cached = try state.get("campaign")
    }

    private func save(_ value: State) throws {
        try state.set("campaign", value)
        cached = value
    }

    /// Reads the campaign parameters; returns why a campaign was not activated, if one was named.
    @discardableResult
    func take(parameters: [String: String], nowMs: Int64) throws -> String? {
        guard let name = parameters[settings.paramCurrentCampaign], !name.isEmpty else { return nil }
        var expires = nowMs + Int64(settings.defaultCampaignExpiration * 1000)
        if let endText = parameters[settings.paramCampaignEndTime] {
            guard let seconds = Double(endText) else { return "\(settings.paramCampaignEndTime)=\(endText) is not epoch seconds" }
            expires = Int64(seconds * 1000)
            if expires <= nowMs { return "campaign '\(name)' ended at \(endText), before now: not activated" }
        }
        var current = cached ?? State()
        if let previous = current.current, previous != name { current.last = previous }
        current.current = name
        current.expiresAtMs = expires
        try save(current)
        return nil
    }

    /// Adds Campaign Name (while current) and Last Campaign to an event, never over the caller's values.
    func annotate(_ event: inout Event) throws {
        guard var current = cached else { return }
        if let name = current.current, let expires = current.expiresAtMs {
            if event.timestampMs < expires {
                event.fill(settings.currentCampaignField, .string(name))
            } else {
                current.last = name  // expired: it becomes the last campaign
                current.current = nil
                current.expiresAtMs = nil
                try save(current)
            }
        }
        if let last = current.last { event.fill(settings.lastCampaignField, .string(last)) }
    }
}
