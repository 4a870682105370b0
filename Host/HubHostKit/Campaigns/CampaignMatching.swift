import Foundation
import HubHostABI

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

    /// Evaluates events in order; what they change (satisfied triggers, campaigns queued) is written
    /// at once, in one transaction for all of them, onto the state as stored then (another process
    /// may have satisfied other triggers of the same campaign meanwhile). Events that change nothing
    /// write nothing: the event path costs a commit only when the state really changes.
    public func logEvents(_ events: [Event]) {
        lock.withLock {
            refreshForEvents()
            guard enabled else { return }
            let compiled = self.compiled
            guard !compiled.triggers.isEmpty else {
                // No trigger to match (no campaign, or none with triggers): an app start is only
                // noted, as below, and no event is looked at further (looking each one up by type
                // and name in empty tables cost a hash of its name, for nothing).
                if !appStartLogged, events.contains(where: { $0.type == .appStart }) { appStartLogged = true }
                return
            }
            var progress = Progress(slots: compiled.triggers.count, campaigns: loaded.count)
            var touched: [Int] = []
            var attributes = EventAttributes(names: compiled.names.count)
            compiled.triggers.withUnsafeBufferPointer { triggers in
                compiled.conditions.withUnsafeBufferPointer { conditions in
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
                        attributes.forget()
                        var ranges = 0
                        if let byType, let range = compiled.byType[byType] {
                            ranges += 1
                            match(triggers[range], conditions, compiled, event, &attributes, &progress, &touched)
                        }
                        if !event.name.isEmpty, let range = compiled.byName[event.name] {
                            ranges += 1
                            match(triggers[range], conditions, compiled, event, &attributes, &progress, &touched)
                        }
                        if appStart {
                            for (c, campaign) in loaded.enumerated() where campaign.triggers.contains(where: { $0.eventType == 1 }) {
                                touched.append(c)
                            }
                            ranges += 1
                        }
                        // One event's campaigns in list order, as before (one range is in list order already).
                        if ranges > 1 { touched.sort() }
                        for c in touched { progress.touch(c) }
                    }
                }
            }
            guard !progress.touched.isEmpty else { return }
            // Only a real change costs a commit: asked of the state as last read, without copying it.
            guard changes(progress, cache, queued: queuedIDs, now: nowMs()) else { return }
            let listVersion = seenListVersion
            do {
                try update { _, _ in
                    // Another process loaded a new list in between: trigger positions may differ.
                    guard seenListVersion == listVersion else {
                        logger.notice("the campaign list changed while events were matched; their progress is not recorded")
                        return
                    }
                    _ = apply(progress, to: &cache, queued: &queuedIDs, now: nowMs())
                }
            } catch {
                logger.error("campaign progress from tracked events not saved: \(error)")
            }
        }
    }

    /// The attributes of one event that the candidates' conditions read, each looked up once per
    /// event: by name number (CompiledTriggers.names), the attribute's position in the event and
    /// its value as operators read it.
    struct EventAttributes {
        /// By name number: -2 not looked up yet, -1 the event has no such attribute, else its position.
        private var position: [Int]
        /// By name number, once found: the value as an hh_value_t, except a string (its bytes are
        /// borrowed per call, type `borrowPerCall`).
        private var raw: [hh_value_t]
        /// The names looked up for the current event, to forget them before the next.
        private var looked: [Int] = []
        static let borrowPerCall: hh_value_type_t = -1

        init(names: Int) {
            position = Array(repeating: -2, count: names)
            raw = Array(repeating: hh_value_t(), count: names)
        }

        mutating func forget() {
            for name in looked { position[name] = -2 }
            looked.removeAll(keepingCapacity: true)
        }

        /// The position of the attribute named `name` in `event` (-1: absent), and its value.
        @inline(__always)
        mutating func find(_ name: Int, in event: Event, names: [String]) -> (position: Int, raw: hh_value_t) {
            let known = position[name]
            if known != -2 { return (known, raw[name]) }
            looked.append(name)
            let found = event.attributes.firstIndex { $0.name == names[name] } ?? -1
            position[name] = found
            guard found >= 0 else { return (-1, hh_value_t()) }
            var value = hh_value_t()
            switch event.attributes[found].value {
            case .null: value.type = HH_VALUE_NULL
            case .string: value.type = Self.borrowPerCall
            case .int(let i):
                value.type = HH_VALUE_INT64
                value.of.int64 = i
            case .double(let d):
                value.type = HH_VALUE_DOUBLE
                value.of.real = d
            case .bool(let b):
                value.type = HH_VALUE_BOOL
                value.of.boolean = b
            case .timeMs(let t):
                value.type = HH_VALUE_TIME_MS
                value.of.time_ms = t
            }
            raw[name] = value
            return (found, value)
        }
    }

    /// Records the triggers of `triggers` that `event` satisfies in `progress`, and their
    /// campaigns in `touched` (each once: a range is in list order, so a campaign's triggers in it
    /// are next to each other).
    private func match(
        _ triggers: Slice<UnsafeBufferPointer<CompiledTriggers.Trigger>>, _ conditions: UnsafeBufferPointer<CompiledTriggers.Condition>,
        _ compiled: CompiledTriggers, _ event: Event, _ attributes: inout EventAttributes,
        _ progress: inout Progress, _ touched: inout [Int]
    ) {
        let first = touched.count
        for trigger in triggers {
            var all = true
            for k in trigger.conditions where !holds(conditions[k], k, compiled, event, &attributes) {
                all = false
                break
            }
            guard all else { continue }
            if trigger.recorded { progress.satisfy(trigger) }
            if touched.count == first || touched[touched.count - 1] != trigger.campaign { touched.append(trigger.campaign) }
        }
    }

    /// Whether `event` meets `condition` (at `k` in `compiled.conditions`): one C call for an
    /// in-process operator, with both values made before.
    @inline(__always)
    private func holds(
        _ condition: CompiledTriggers.Condition, _ k: Int, _ compiled: CompiledTriggers, _ event: Event,
        _ attributes: inout EventAttributes
    ) -> Bool {
        guard condition.op >= 0 else { return false }
        let (position, raw) = attributes.find(condition.name, in: event, names: compiled.names)
        guard position >= 0 else { return false }
        guard let compare = condition.compare else {  // isolated: through the worker
            let answer = compiled.operators[condition.op].compare(event: event.attributes[position].value, trigger: compiled.values[k])
            if answer.status != 0 { failed(compiled, condition, answer.reason) }
            return answer.status == 0 && answer.result
        }
        var result = false
        var trigger = condition.value
        var status: hh_status_t
        if raw.type == EventAttributes.borrowPerCall {
            status = event.attributes[position].value.withRawValue { compare(condition.instance, $0, &trigger, &result) }
        } else {
            var value = raw
            status = compare(condition.instance, &value, &trigger, &result)
        }
        if status != HH_OK {
            failed(compiled, condition, compiled.operators[condition.op].handle.instance?.takeError() ?? "")
            return false
        }
        return result
    }

    private func failed(_ compiled: CompiledTriggers, _ condition: CompiledTriggers.Condition, _ reason: String) {
        logger.info(
            "trigger attribute '\(compiled.names[condition.name])' \(compiled.operators[condition.op].operatorName) answered false: \(reason)")
    }

    /// Whether `apply` would change `cache`: a trigger not satisfied yet, or else (the satisfied
    /// triggers being the same) a touched campaign that is ready and would be queued.
    func changes(_ progress: Progress, _ cache: UserCache, queued: Set<String>, now: Int64) -> Bool {
        // A local array: a campaign read from it is borrowed, where one read from the property was
        // copied (every field retained and released) for each call below.
        let loaded = self.loaded
        for (c, trigger) in progress.satisfied where !(cache.satisfied[loaded[c].id]?.contains(trigger) ?? false) { return true }
        for c in progress.touched {
            let id = loaded[c].id
            if !queued.contains(id), let position = positions[id], isReady(loaded[position], in: cache),
                eligible(loaded[position], in: cache, now: now)
            {
                return true
            }
        }
        return false
    }

    /// Adds `progress` to `cache`; returns whether anything changed.
    func apply(_ progress: Progress, to cache: inout UserCache, queued: inout Set<String>, now: Int64) -> Bool {
        let loaded = self.loaded  // borrowed campaigns, as in `changes`
        // Room for everything that may be added, made once: growing one insert at a time rehashed
        // the whole dictionary and set again and again (a first batch satisfies thousands).
        cache.satisfied.reserveCapacity(cache.satisfied.count + progress.satisfied.count)
        queued.reserveCapacity(queued.count + progress.touched.count)
        var changed = false
        for (c, trigger) in progress.satisfied where cache.satisfied[loaded[c].id, default: []].insert(trigger).inserted { changed = true }
        for c in progress.touched {
            let id = loaded[c].id
            guard !queued.contains(id), let position = positions[id], isReady(loaded[position], in: cache),
                eligible(loaded[position], in: cache, now: now)
            else {
                continue
            }
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
        let now = nowMs()
        for campaign in loaded {
            let known = cache.knownMaxImpressions[campaign.id]
            if known == nil {
                cache.impressionsLeft[campaign.id] = campaign.maxImpressions
            } else if known != campaign.maxImpressions {
                let left = max(0, cache.impressionsLeft[campaign.id] ?? 0)
                cache.impressionsLeft[campaign.id] = min(campaign.maxImpressions, max(0, left + campaign.maxImpressions - known!))
            }
            // Written only when it differs: `update` keeps the cache as read and compares it with
            // this one afterwards, and a write copied the whole dictionary and made that
            // comparison look up every entry, at every change of state.
            if known != campaign.maxImpressions { cache.knownMaxImpressions[campaign.id] = campaign.maxImpressions }
        }
        // Likewise the queue is replaced only when something left it.
        let kept = cache.queue.filter { id in positions[id].map { eligible(loaded[$0], in: cache, now: now) } ?? false }
        if kept.count != cache.queue.count { cache.queue = kept }
        queuedIDs = Set(cache.queue)
        if let later = cache.later {
            let kept = later.filter(queuedIDs.contains)
            cache.later = kept.isEmpty ? nil : kept
        }
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
        // Outside its rollout the campaign never reaches this user.
        if campaign.rollout != nil && group(of: campaign) == .excluded { return false }
        // A campaign that needs only app start shows once per launch.
        if campaign.triggers.allSatisfy({ $0.eventType == 1 }) && shownThisLaunch.contains(campaign.id) { return false }
        return true
    }
}
