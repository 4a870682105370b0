import Foundation

/// Matching tracked events against the campaigns' triggers, through an index by event type and name;
/// a campaign whose triggers are all satisfied joins the current user's queue.
extension CampaignEngine {
    /// What a run of events did: triggers newly satisfied and the campaigns they touched, in
    /// order, as positions in `loaded` (ids are looked up once, when the progress is applied). A
    /// trigger satisfied again by a later event of the run is kept once. Flags by position, not
    /// sets: no hashing per match.
    struct Progress {
        var satisfied: [(campaign: Int, trigger: Int)] = []
        var touched: [Int] = []
        // Made on first use: most single events (the event pipeline's) touch no campaign.
        private var satisfiedSlots: [Bool] = [], touchedCampaigns: [Bool] = []
        private let slots: Int, campaigns: Int

        init(slots: Int, campaigns: Int) {
            self.slots = slots
            self.campaigns = campaigns
        }

        mutating func satisfy(_ trigger: CompiledTriggers.Trigger) {
            if satisfiedSlots.isEmpty { satisfiedSlots = Array(repeating: false, count: slots) }
            guard !satisfiedSlots[trigger.slot] else { return }
            satisfiedSlots[trigger.slot] = true
            satisfied.append((trigger.campaign, trigger.trigger))
        }
        mutating func touch(_ campaign: Int) {
            if touchedCampaigns.isEmpty { touchedCampaigns = Array(repeating: false, count: campaigns) }
            guard !touchedCampaigns[campaign] else { return }
            touchedCampaigns[campaign] = true
            touched.append(campaign)
        }
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
            let compiled = self.compiled
            var progress = Progress(slots: compiled.triggers.count, campaigns: loaded.count)
            var touched: [Int] = []
            compiled.triggers.withUnsafeBufferPointer { triggers in compiled.conditions.withUnsafeBufferPointer { conditions in
                for event in events {
                    var byType: Int?
                    var appStart = false
                    switch event.type {
                    case .appStart:
                        if !appStartLogged {  // persistent for the launch: later logs are ignored
                            appStartLogged = true
                            appStart = true
                            byType = 1
                        }
                    case .loginSuccessful: byType = 2
                    case .purchaseSuccessful: byType = 3
                    default: break
                    }
                    touched.removeAll(keepingCapacity: true)
                    if let byType, let range = compiled.byType[byType] { match(triggers[range], conditions, event, &progress, &touched) }
                    if !event.name.isEmpty, let range = compiled.byName[event.name] { match(triggers[range], conditions, event, &progress, &touched) }
                    if appStart {
                        for (c, campaign) in loaded.enumerated() where campaign.triggers.contains(where: { $0.eventType == 1 }) { touched.append(c) }
                    }
                    // One event's campaigns in list order, as before.
                    if touched.count > 1 { touched.sort() }
                    for c in touched { progress.touch(c) }
                }
            } }
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

    /// Records the triggers of `triggers` that `event` satisfies in `progress`, and their
    /// campaigns in `touched` (each once).
    private func match(_ triggers: Slice<UnsafeBufferPointer<CompiledTriggers.Trigger>>, _ conditions: UnsafeBufferPointer<CompiledTriggers.Condition>,
                       _ event: Event, _ progress: inout Progress, _ touched: inout [Int]) {
        for trigger in triggers where matches(conditions[trigger.conditions], event) {
            if trigger.recorded { progress.satisfy(trigger) }
            if !touched.contains(trigger.campaign) { touched.append(trigger.campaign) }
        }
    }

    /// Adds `progress` to `cache`; returns whether anything changed.
    func apply(_ progress: Progress, to cache: inout UserCache, queued: inout Set<String>, now: Int64) -> Bool {
        var changed = false
        for (c, trigger) in progress.satisfied where cache.satisfied[loaded[c].id, default: []].insert(trigger).inserted { changed = true }
        for id in progress.touched.map({ loaded[$0].id }) where !queued.contains(id) {
            guard let position = positions[id], isReady(loaded[position], in: cache), eligible(loaded[position], in: cache, now: now) else { continue }
            cache.queue.append(id)
            queued.insert(id)
            changed = true
        }
        return changed
    }

    func rebuildIndex() {
        compiled = CompiledTriggers(loaded, operators: operators)
    }

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

    func matches(_ conditions: Slice<UnsafeBufferPointer<CompiledTriggers.Condition>>, _ event: Event) -> Bool {
        for condition in conditions {
            guard let value = event[attribute: condition.name], let op = condition.op else { return false }
            let answer = op.compare(event: value, trigger: condition.value)
            if answer.status != 0 {
                logger.info("trigger attribute '\(condition.name)' \(op.operatorName) answered false: \(answer.reason)")
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
