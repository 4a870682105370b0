import Logging

/// What the advertiser-ID delegate chain decided, and which delegate decided it.
public struct AdvertiserIDDecision: Codable, Equatable, Sendable {
    /// The advertiser ID to use; nil when none is used.
    public var advertiserID: String?
    /// True when the deciding delegate said limit ad tracking is on: then `advertiserID` is nil.
    public var limitAdTracking: Bool
    /// The instance that decided, nil when no delegate had an opinion.
    public var decidedBy: String?
    /// Why no ID is used, when none is.
    public var reason: String?
}

/// The ZBiM advertiser-ID delegate rule: the delegate decides the advertiser ID; with limit ad
/// tracking on, no advertiser ID is used at all. Delegates are asked in order; the first that
/// answers decides; one with no opinion or a failure passes to the next.
struct AdvertiserIDResolver {
    let plugins: [AdvertiserIDPlugin]
    let logger: Logger

    func decide() -> AdvertiserIDDecision {
        for plugin in plugins {
            let id = plugin.handle.instanceID
            switch plugin.answer() {
            case .id(let value):
                return AdvertiserIDDecision(advertiserID: value, limitAdTracking: false, decidedBy: id, reason: nil)
            case .limitAdTracking:
                return AdvertiserIDDecision(
                    advertiserID: nil, limitAdTracking: true, decidedBy: id,
                    reason: "limit ad tracking is on: no advertiser ID is used")
            case .none:
                return AdvertiserIDDecision(
                    advertiserID: nil, limitAdTracking: false, decidedBy: id,
                    reason: "the delegate has no advertiser ID")
            case .noOpinion:
                continue
            case .failed(let status, let message):
                logger.error("advertiser-ID delegate '\(id)' failed (\(StatusCode.name(status)))\(message.isEmpty ? "" : ": \(message)")")
            }
        }
        return AdvertiserIDDecision(
            advertiserID: nil, limitAdTracking: false, decidedBy: nil,
            reason: plugins.isEmpty
                ? "no advertiser_id delegate is loaded: none is used"
                : "no advertiser_id delegate has an ID: none is used")
    }
}
