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
    /// Read once. A new campaign is written at once; an expiry found while events are prepared is
    /// written with those events, in their transaction (`takePendingWrite`), since preparing may
    /// run while the store's writer is busy with the batch.
    private var cached: State?
    private var pending: State?

    init(settings: EventSettings, state: KeyValueState) throws {
        self.settings = settings
        self.state = state
        cached = try state.get("campaign")
    }

    private func save(_ value: State) throws {
        try state.set("campaign", value)
        cached = value
        pending = nil
    }

    /// The state change annotating found (an expiry), to be written with the events; cleared.
    func takePendingWrite() -> (key: String, json: String)? {
        guard let value = pending, let data = try? JSONEncoder().encode(value) else { return nil }
        pending = nil
        return ("campaign", String(decoding: data, as: UTF8.self))
    }

    /// Reads the campaign parameters; returns why a campaign was not activated, if one was named.
    @discardableResult
    func take(parameters: [String: String], nowMs: Int64) throws -> String? {
        guard let name = parameters[settings.paramCurrentCampaign], !name.isEmpty else { return nil }
        var expires = nowMs.saturatingAdding(SafeTime.durationMs(settings.defaultCampaignExpiration))
        if let endText = parameters[settings.paramCampaignEndTime] {
            guard let seconds = Double(endText), let ms = SafeTime.milliseconds(epochSeconds: seconds) else {
                return "\(settings.paramCampaignEndTime)=\(endText) is not epoch seconds between 1970 and 9999: campaign '\(name)' not activated"
            }
            expires = ms
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
    func annotate(_ event: inout Event) {
        guard var current = cached else { return }
        if let name = current.current, let expires = current.expiresAtMs {
            if event.timestampMs < expires {
                event.fill(settings.currentCampaignField, .string(name))
            } else {
                current.last = name  // expired: it becomes the last campaign
                current.current = nil
                current.expiresAtMs = nil
                cached = current
                pending = current
            }
        }
        if let last = current.last { event.fill(settings.lastCampaignField, .string(last)) }
    }
}
