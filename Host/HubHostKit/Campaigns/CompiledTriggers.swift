import Foundation

/// The campaigns' triggers as matching reads them, made once per loaded list: flat arrays of plain
/// values, triggers grouped by what selects them (a custom event's name, or the wire event type of
/// app start, login and purchase) so that an event's candidates are one contiguous range, and each
/// attribute condition with its operator already found (nil: no loaded operator has that name or
/// code, so the condition never holds). Per event this leaves one dictionary lookup, then per
/// candidate the attribute lookup and one operator call: no operator search, no key string, no
/// copy of a campaign and no reference counting on the way.
struct CompiledTriggers {
    struct Trigger {
        /// Positions in the loaded list and in the campaign's triggers.
        var campaign: Int
        var trigger: Int
        /// Whether satisfying it is recorded (app-start triggers live in the launch only).
        var recorded: Bool
        /// Its position in `triggers`: the slot of its satisfied flag while a run is matched.
        var slot: Int
        /// Its range in `conditions`.
        var conditions: Range<Int>
    }

    struct Condition {
        var name: String
        var value: PluginValue
        var op: TriggerOperatorPlugin?
    }

    private(set) var triggers: [Trigger] = []
    private(set) var conditions: [Condition] = []
    /// Custom events' triggers by event name; the others by wire event type (1, 2, 3).
    private(set) var byName: [String: Range<Int>] = [:]
    private(set) var byType: [Int: Range<Int>] = [:]

    init() {}

    init(_ campaigns: [Campaign], operators: OperatorSet) {
        var named: [String: [(Int, Int)]] = [:], typed: [Int: [(Int, Int)]] = [:]
        for (c, campaign) in campaigns.enumerated() {
            for (t, trigger) in campaign.triggers.enumerated() {
                if trigger.eventType == 4 { named[trigger.eventName, default: []].append((c, t)) }
                else { typed[trigger.eventType, default: []].append((c, t)) }
            }
        }
        var found: [String: TriggerOperatorPlugin?] = [:]
        func add(_ positions: [(Int, Int)]) -> Range<Int> {
            let start = triggers.count
            for (c, t) in positions {  // in list order, as the campaigns were loaded
                let trigger = campaigns[c].triggers[t]
                let first = conditions.count
                for attribute in trigger.attributes {
                    if found[attribute.op] == nil { found[attribute.op] = .some(operators.find(attribute.op)) }
                    conditions.append(Condition(name: attribute.name, value: attribute.value, op: found[attribute.op]!))
                }
                triggers.append(Trigger(campaign: c, trigger: t, recorded: trigger.eventType != 1, slot: triggers.count,
                                        conditions: first..<conditions.count))
            }
            return start..<triggers.count
        }
        for (name, positions) in named { byName[name] = add(positions) }
        for (type, positions) in typed { byType[type] = add(positions) }
    }
}
