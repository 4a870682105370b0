import Foundation

/// The queue of ready campaigns and the messages handed out from it: one at a time, filtered by
/// contexts; impressions, closing and opt-outs. Every change is written at once (see
/// CampaignSharedState), so `hubhost serve` and CLI commands on one data directory see one queue.
extension CampaignEngine {
    /// The campaigns ready to show, in the order they became ready (expired ones never show).
    public func ready() -> [Campaign] {
        lock.withLock {
            refreshQuietly()
            guard enabled else { return [] }
            let now = Clock.wallMs()
            return cache.queue.compactMap { id in positions[id].map { loaded[$0] } }.filter { eligible($0, in: cache, now: now) }
        }
    }

    /// The campaign was shown: one impression, out of the queue, its triggers must be met again.
    /// Counted on the stored count, so displays reported by several processes add up.
    @discardableResult
    public func displayed(_ id: String) throws -> Campaign {
        try lock.withLock {
            let campaign: Campaign = try update { _, _ in
                guard let position = positions[id] else { throw NotFound(description: "no campaign \(id)") }
                // Impressions stop at zero: a display past the limit does not count below it.
                cache.impressionsLeft[id] = max(0, (cache.impressionsLeft[id] ?? loaded[position].maxImpressions) - 1)
                cache.queue.removeAll { $0 == id }
                queuedIDs.remove(id)
                if cache.current == id { cache.current = nil }
                cache.satisfied[id] = nil
                return loaded[position]
            }
            shownThisLaunch.insert(id)
            return campaign
        }
    }

    /// Hands out the next message that may show now, given the contexts the caller allows; it stays
    /// the current message until it is reported shown (`displayed`) or closed. Nil when none.
    public func next(allowedContexts: [String] = []) -> Campaign? {
        lock.withLock {
            refreshQuietly()
            guard enabled, let choice = select(allowedContexts) else { return nil }
            if cache.current == choice.id { return choice }
            do {
                // Chosen again on the state as stored now, and made current there.
                return try update { _, _ in
                    guard enabled, let chosen = select(allowedContexts) else { return nil }
                    cache.current = chosen.id
                    return chosen
                }
            } catch {
                logger.error("the current message could not be saved: \(error)")
                return choice
            }
        }
    }

    /// The current message when it may still show, else the first queued one the contexts allow.
    private func select(_ allowedContexts: [String]) -> Campaign? {
        let now = Clock.wallMs()
        if let current = cache.current, let position = positions[current], eligible(loaded[position], in: cache, now: now) {
            return loaded[position]
        }
        for id in cache.queue {
            guard let position = positions[id], eligible(loaded[position], in: cache, now: now) else { continue }
            let campaign = loaded[position]
            let contexts = campaign.contexts
            let allowed: Bool
            switch (contexts.isEmpty, contextRule) {
            case (true, _): allowed = true
            case (false, .all): allowed = contexts.allSatisfy(allowedContexts.contains)
            case (false, .any): allowed = contexts.contains(where: allowedContexts.contains)
            case (false, .none): allowed = false
            }
            if allowed { return campaign }
        }
        return nil
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
