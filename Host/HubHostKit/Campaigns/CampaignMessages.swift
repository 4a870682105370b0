import Foundation

/// The queue of ready campaigns and the messages handed out from it: one at a time, filtered by
/// contexts; impressions, closing and opt-outs. Every change is written at once (see
/// CampaignSharedState), so `hubhost serve` and CLI commands on one data directory see one queue.
extension CampaignEngine {
    /// The campaigns ready to show, highest priority first, then in the order they became ready
    /// (expired ones never show). Pauses and frequency caps do not take them out: they stay ready
    /// and show when allowed.
    public func ready() -> [Campaign] {
        lock.withLock {
            refreshQuietly()
            guard enabled else { return [] }
            let now = nowMs()
            return ordered(cache.queue).compactMap { id in positions[id].map { loaded[$0] } }.filter { eligible($0, in: cache, now: now) }
        }
    }

    /// `ids` by priority, highest first; equal priorities keep their order.
    func ordered(_ ids: [String]) -> [String] {
        guard loaded.contains(where: { $0.priority != 0 }) else { return ids }
        return ids.enumerated().sorted { a, b in
            let pa = positions[a.element].map { loaded[$0].priority } ?? 0
            let pb = positions[b.element].map { loaded[$0].priority } ?? 0
            return pa != pb ? pa > pb : a.offset < b.offset
        }.map(\.element)
    }

    /// The campaign was shown: one impression, out of the queue, its triggers must be met again.
    /// Counted on the stored count, so displays reported by several processes add up; the
    /// impression counts for the frequency caps too, and `Campaign Shown` is tracked.
    @discardableResult
    public func displayed(_ id: String) throws -> Campaign {
        let now = nowMs()
        let campaign: Campaign = try lock.withLock {
            let campaign: Campaign = try update { db, _ in
                guard let position = positions[id] else { throw NotFound(description: "no campaign \(id)") }
                countImpression(id, position: position)
                frequencyCaps.count(id, in: &cache, sessionStart: try shared.sessionStart(db), now: now)
                return loaded[position]
            }
            shownThisLaunch.insert(id)
            return campaign
        }
        send([Self.experimentEvent(campaign, group: .treatment, now: now)])
        return campaign
    }

    /// One impression of the campaign at `position` in `cache` (the caller holds `lock`, in `update`).
    private func countImpression(_ id: String, position: Int) {
        // Impressions stop at zero: a display past the limit does not count below it.
        cache.impressionsLeft[id] = max(0, (cache.impressionsLeft[id] ?? loaded[position].maxImpressions) - 1)
        cache.queue.removeAll { $0 == id }
        queuedIDs.remove(id)
        if cache.current == id { cache.current = nil }
        cache.satisfied[id] = nil
        cache.later?.removeAll { $0 == id }
    }

    /// Hands out the next message that may show now, given the contexts the caller allows; it stays
    /// the current message until it is reported shown (`displayed`) or closed. Nil when none.
    public func next(allowedContexts: [String] = []) -> Campaign? { nextMessage(allowedContexts: allowedContexts).message }

    /// As `next`, and when no message may show although one is ready, why (`held`): the pause or
    /// the frequency cap holding it. Campaigns held out for this user on the way are counted as
    /// shown to the control group (`Campaign Holdout` is tracked) and the next one is tried.
    public func nextMessage(allowedContexts: [String] = []) -> NextMessage {
        let now = nowMs()
        var exposures: [Event] = []
        let answer: NextMessage = lock.withLock {
            refreshQuietly()
            guard enabled else { return NextMessage() }
            let sessionStart = try? shared.state.read { db in try shared.sessionStart(db) }
            let choice = select(allowedContexts, sessionStart: sessionStart, now: now)
            if choice.heldOut.isEmpty && (choice.message == nil || cache.current == choice.message?.id) {
                return NextMessage(message: choice.message, held: choice.held)
            }
            do {
                // Chosen again on the state as stored now, and made current there.
                return try update { db, _ in
                    guard enabled else { return NextMessage() }
                    let chosen = select(allowedContexts, sessionStart: try shared.sessionStart(db), now: now)
                    for campaign in chosen.heldOut {
                        guard let position = positions[campaign.id] else { continue }
                        countImpression(campaign.id, position: position)
                        shownThisLaunch.insert(campaign.id)
                        exposures.append(Self.experimentEvent(campaign, group: .control, now: now))
                    }
                    if let message = chosen.message { cache.current = message.id }
                    return NextMessage(message: chosen.message, held: chosen.held)
                }
            } catch {
                logger.error("the current message could not be saved: \(error)")
                exposures = []
                return NextMessage(message: choice.message, held: choice.held)
            }
        }
        send(exposures)
        return answer
    }

    /// The current message when it may still show (neither the pause nor a cap across campaigns
    /// holds it), else the first queued one (by priority) the contexts, the caps and the user's
    /// holdout group allow; else why a ready one is held. The
    /// held-out campaigns met on the way are returned to be counted (the caller holds `lock`).
    private func select(
        _ allowedContexts: [String], sessionStart: Int64?, now: Int64
    ) -> (message: Campaign?, held: HoldReason?, heldOut: [Campaign]) {
        let (pause, caps) = holds.withLock { ($0.pause, $0.caps) }
        let paused = pause.isActive(at: now)
        let globalHold = caps.isEmpty ? nil : caps.globalHold(cache, sessionStart: sessionStart, now: now)
        if let current = cache.current, let position = positions[current], eligible(loaded[position], in: cache, now: now) {
            if paused { return (nil, .paused, []) }
            // Another message shown since this one was handed out may have used the cap up.
            if let globalHold { return (nil, globalHold, []) }
            return (loaded[position], nil, [])
        }
        let later = Set(cache.later ?? [])
        var heldBy: HoldReason?
        var heldOut: [Campaign] = []
        for id in ordered(cache.queue) {
            guard let position = positions[id], eligible(loaded[position], in: cache, now: now) else { continue }
            let campaign = loaded[position]
            // Put back for later: its triggers must hold again (app start in this launch, too).
            if later.contains(id) && !isReady(campaign, in: cache) { continue }
            guard allows(campaign.contexts, allowedContexts) else { continue }
            // Held now, shown later: the pause and the caps keep it queued.
            if paused { return (nil, .paused, heldOut) }
            if let globalHold { return (nil, globalHold, heldOut) }
            if caps.holdsCampaign(id, cache, now: now) {
                heldBy = heldBy ?? .campaignInterval
                continue
            }
            if group(of: campaign) == .control {
                heldOut.append(campaign)
                continue
            }
            return (campaign, nil, heldOut)
        }
        return (nil, heldBy, heldOut)
    }

    /// Whether a message with `contexts` may show when the caller allows `allowedContexts`.
    private func allows(_ contexts: [String], _ allowedContexts: [String]) -> Bool {
        switch (contexts.isEmpty, contextRule) {
        case (true, _): return true
        case (false, .all): return contexts.allSatisfy(allowedContexts.contains)
        case (false, .any): return contexts.contains(where: allowedContexts.contains)
        case (false, .none): return false
        }
    }

    /// Closes the current message without counting an impression; `clearQueue` also empties the queue.
    public func close(clearQueue: Bool) {
        lock.withLock {
            do {
                try update { _, _ in
                    if let current = cache.current { cache.queue.removeAll { $0 == current } }
                    cache.current = nil
                    if clearQueue { cache.queue = [] }
                    queuedIDs = Set(cache.queue)
                }
            } catch {
                logger.error("closing the message could not be saved: \(error)")
            }
        }
    }

    /// The user opted out of the campaign (when its message allows it): it never shows to them
    /// again, in any process on the data directory.
    public func optOut(_ id: String) throws {
        try lock.withLock {
            try update { _, _ in
                guard let position = positions[id] else { throw NotFound(description: "no campaign \(id)") }
                guard loaded[position].optOut else { throw NotAllowed(description: "campaign \(id) does not offer an opt-out") }
                if cache.current == id { cache.current = nil }
                cache.optedOut.insert(id)
                cache.queue.removeAll { $0 == id }
                queuedIDs.remove(id)
            }
        }
    }
}
