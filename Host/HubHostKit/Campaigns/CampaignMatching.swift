import Foundation

/// Matching tracked events against the campaigns' triggers, through an index by event type and name;
/// a campaign whose triggers are all satisfied joins the current user's queue.
extension CampaignEngine {
    /// What a run of events did: triggers newly satisfied and the campaigns they touched, in order.
    struct Progress {
        var satisfied: [(campaign: String, trigger: Int)] = []
        var touched: [String] = []
        var touchedSet = Set<String>()

        mutating func touch(_ id: String) { if touchedSet.insert(id).inserted { touched.append(id) } }
    }

    /// Called by the event pipeline for every tracked event.
    public func logEvent(_ event: Event) { logEvents([event]) }

    /// Evaluates events in order; what they change (satisfied triggers, campaigns queued) is written
    /// at once, in one transaction for all of them, onto the state as stored then (another process
    /// may have satisfied other triggers of the same campaign meanwhile). Events that change nothing
    /// write nothing: the event path costs a commit only when the state really changes.
    public func logEvents(_ events: [Event]) {
        lock.withLock {
            refreshQuietly()
            guard enabled else { return }
            var progress = Progress()
            for event in events {
                var keys: [String] = []
                var appStart = false
                switch event.type {
                case .appStart:
                    if !appStartLogged {  // persistent for the launch: later logs are ignored
                        appStartLogged = true
                        appStart = true
                        keys.append("1")
                    }
                case .loginSuccessful: keys.append("2")
                case .purchaseSuccessful: keys.append("3")
                default: break
                }
                if !event.name.isEmpty { keys.append(Self.key(4, event.name)) }
                var touched = Set<Int>()
                for key in keys {
                    for (c, t) in index[key] ?? [] where matches(loaded[c].triggers[t], event) {
                        if loaded[c].triggers[t].eventType != 1 { progress.satisfied.append((loaded[c].id, t)) }
                        touched.insert(c)
                    }
                }
                if appStart {
                    for (c, campaign) in loaded.enumerated() where campaign.triggers.contains(where: { $0.eventType == 1 }) { touched.insert(c) }
                }
                for c in touched.sorted() { progress.touch(loaded[c].id) }
            }
            guard !progress.touched.isEmpty else { return }
            // Only a real change costs a commit: try it on a copy of the state as last read.
            var probe = cache, probeQueued = queuedIDs
            guard apply(progress, to: &probe, queued: &probeQueued, now: Clock.wallMs()) else { return }
            let listVersion = seenListVersion
            do {
                try update { _, _ in
                    // Another process loaded a new list in between: trigger positions may differ.
                    guard seenListVersion == listVersion else {
                        logger.notice("the campaign list changed while events were matched; their progress is not recorded")
                        return
                    }
                    _ = apply(progress, to: &cache, queued: &queuedIDs, now: Clock.wallMs())
                }
            } catch {
                logger.error("campaign progress from tracked events not saved: \(error)")
            }
        }
    }

    /// Adds `progress` to `cache`; returns whether anything changed.
    func apply(_ progress: Progress, to cache: inout UserCache, queued: inout Set<String>, now: Int64) -> Bool {
        var changed = false
        for (id, trigger) in progress.satisfied where cache.satisfied[id, default: []].insert(trigger).inserted { changed = true }
        for id in progress.touched where !queued.contains(id) {
            guard let position = positions[id], isReady(loaded[position], in: cache), eligible(loaded[position], in: cache, now: now) else { continue }
            cache.queue.append(id)
            queued.insert(id)
            changed = true
        }
        return changed
    }

    func rebuildIndex() {
        index = [:]
        for (c, campaign) in loaded.enumerated() {
            for (t, trigger) in campaign.triggers.enumerated() {
                index[Self.key(trigger.eventType, trigger.eventName), default: []].append((c, t))
            }
        }
    }

    static func key(_ eventType: Int, _ name: String) -> String { eventType == 4 ? "4:\(name)" : String(eventType) }

    /// Impressions left for new campaigns, max-impression changes, queue clean-up, on `cache` (the
    /// caller holds `lock`). A changed maxImpressions adds the difference to what is left, and what
    /// is left stays between 0 and the new maximum (a count stored below zero by an older hubhost
    /// counts as 0).
    func reconcile() {
        let now = Clock.wallMs()
        for campaign in loaded {
            let known = cache.knownMaxImpressions[campaign.id]
            if known == nil { cache.impressionsLeft[campaign.id] = campaign.maxImpressions }
            else if known != campaign.maxImpressions {
                let left = max(0, cache.impressionsLeft[campaign.id] ?? 0)
                cache.impressionsLeft[campaign.id] = min(campaign.maxImpressions, max(0, left + campaign.maxImpressions - known!))
            }
            cache.knownMaxImpressions[campaign.id] = campaign.maxImpressions
        }
        cache.queue = cache.queue.filter { id in positions[id].map { eligible(loaded[$0], in: cache, now: now) } ?? false }
        queuedIDs = Set(cache.queue)
    }

    func matches(_ trigger: Campaign.Trigger, _ event: Event) -> Bool {
        for attribute in trigger.attributes {
            guard let value = event[attribute: attribute.name], let op = operators.find(attribute.op) else { return false }
            let answer = op.compare(event: value, trigger: attribute.value)
            if answer.status != 0 {
                logger.info("trigger attribute '\(attribute.name)' \(op.operatorName) answered false: \(answer.reason)")
                return false
            }
            if !answer.result { return false }
        }
        return true
    }

    func isReady(_ campaign: Campaign, in cache: UserCache) -> Bool {
        let satisfied = cache.satisfied[campaign.id] ?? []
        return campaign.triggers.indices.allSatisfy { t in
            campaign.triggers[t].eventType == 1 ? appStartLogged : satisfied.contains(t)
        }
    }

    func eligible(_ campaign: Campaign, in cache: UserCache, now: Int64) -> Bool {
        if campaign.isExpired(nowMs: now) || cache.optedOut.contains(campaign.id) { return false }
        if (cache.impressionsLeft[campaign.id] ?? campaign.maxImpressions) <= 0 { return false }
        // A campaign that needs only app start shows once per launch.
        if campaign.triggers.allSatisfy({ $0.eventType == 1 }) && shownThisLaunch.contains(campaign.id) { return false }
        return true
    }
}
