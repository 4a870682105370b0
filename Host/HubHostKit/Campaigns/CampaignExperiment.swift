import Foundation

/// Rollout and holdout: a campaign's `rollout` is the percent of users it reaches, its `holdout`
/// the percent of those kept out as a control group. A user's bucket is a SHA-256 of the
/// campaign id and the user (user id and tracking identifier), so the same user lands in the same
/// group in every process, after every restart and on every machine. Rollout and holdout use
/// separate buckets (their own salt), so the control group is a fair sample of the users reached.
///
/// Users outside the rollout never get the message (it is never queued for them). A held-out user
/// never sees it either: when it would have shown, the engine tracks a `Campaign Holdout` event
/// (group `control`) and counts it as an impression, so the exposure is recorded as often as the
/// message would have shown. A shown message tracks `Campaign Shown` (group `treatment`).
extension CampaignEngine {
    /// The experiment groups events carry.
    public enum Group: String, Codable, Sendable {
        /// Reached and shown the message.
        case treatment
        /// Reached but held out: never shown the message.
        case control
        /// Outside the rollout: not reached.
        case excluded
    }

    /// The event tracked when a message is reported shown.
    public static let shownEventName = "Campaign Shown"
    /// The event tracked when a held-out user would have been shown a message.
    public static let holdoutEventName = "Campaign Holdout"
    /// The attributes of both events.
    public static let campaignIDAttribute = "Campaign Id"
    /// The attribute of both events naming the user's group (`Group`'s raw value: `treatment` or `control`).
    public static let groupAttribute = "Campaign Group"

    /// The bucket in [0, 100) of `user` for `campaign`, for `salt` ("rollout" or "holdout"): the
    /// first 8 bytes of SHA-256("salt\0campaign\0user") as a fraction of 2^64, times 100.
    public static func bucket(_ salt: String, campaign: String, user: String) -> Double {
        let digest = SHA256.digest(of: Data("\(salt)\u{0}\(campaign)\u{0}\(user)".utf8))
        let high = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Double(high >> 11) / Double(UInt64(1) << 53) * 100
    }

    /// The user's group for `campaign` (pure: no cache).
    public static func group(of campaign: Campaign, user: User) -> Group {
        if let rollout = campaign.rollout, bucket("rollout", campaign: campaign.id, user: user.cacheKey) >= rollout { return .excluded }
        if let holdout = campaign.holdout, bucket("holdout", campaign: campaign.id, user: user.cacheKey) < holdout { return .control }
        return .treatment
    }

    /// The current user's groups, by campaign id, with the rollout and holdout each was worked out
    /// for: `eligible` asks for every queued campaign at every change of state (each batch of
    /// events that changes anything), so an answer known is one dictionary lookup, without
    /// building the bucket keys or taking `holds`. Under `lock`; emptied when the user changes.
    struct Groups {
        var userID = ""
        var idTrackingIdentifier = ""
        var byCampaign: [String: (rollout: Double?, holdout: Double?, group: Group)] = [:]
    }

    /// The current user's group for `campaign`, buckets cached per campaign and user (the caller
    /// holds `lock`, which guards `currentUser` and `groups`).
    func group(of campaign: Campaign) -> Group {
        guard campaign.rollout != nil || campaign.holdout != nil else { return .treatment }
        if groups.userID != currentUser.userID || groups.idTrackingIdentifier != currentUser.idTrackingIdentifier {
            groups = Groups(userID: currentUser.userID, idTrackingIdentifier: currentUser.idTrackingIdentifier)
        }
        if let known = groups.byCampaign[campaign.id], known.rollout == campaign.rollout, known.holdout == campaign.holdout {
            return known.group
        }
        let group = workedOutGroup(of: campaign)
        if groups.byCampaign.count >= 100_000 { groups.byCampaign.removeAll(keepingCapacity: true) }
        groups.byCampaign[campaign.id] = (campaign.rollout, campaign.holdout, group)
        return group
    }

    private func workedOutGroup(of campaign: Campaign) -> Group {
        if let rollout = campaign.rollout, cachedBucket("rollout", campaign.id) >= rollout { return .excluded }
        if let holdout = campaign.holdout, cachedBucket("holdout", campaign.id) < holdout { return .control }
        return .treatment
    }

    private func cachedBucket(_ salt: String, _ campaign: String) -> Double {
        let user = currentUser.cacheKey
        let key = "\(salt)|\(campaign)|\(user)"
        if let known = holds.withLock({ $0.buckets[key] }) { return known }
        let value = Self.bucket(salt, campaign: campaign, user: user)
        holds.withLock { state in
            if state.buckets.count >= 100_000 { state.buckets.removeAll(keepingCapacity: true) }
            state.buckets[key] = value
        }
        return value
    }

    /// The event recording that `campaign` was shown (treatment) or held out (control).
    static func experimentEvent(_ campaign: Campaign, group: Group, now: Int64) -> Event {
        Event(
            type: .namedEvent, name: group == .control ? holdoutEventName : shownEventName, timestampMs: now,
            attributes: [.init(campaignIDAttribute, .string(campaign.id)), .init(groupAttribute, .string(group.rawValue))])
    }
}
