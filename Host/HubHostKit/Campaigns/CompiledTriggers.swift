import Foundation
import HubHostABI

/// The campaigns' triggers as matching reads them, made once per loaded list: flat arrays of plain
/// values, triggers grouped by what selects them (a custom event's name, or the wire event type of
/// app start, login and purchase) so that an event's candidates are one contiguous range, and each
/// attribute condition with its operator already found (none: no loaded operator has that name or
/// code, so the condition never holds). Per event this leaves one dictionary lookup and one lookup
/// of each attribute name the candidates read; per condition one C call with values made before:
/// the trigger's value as an `hh_value_t` made at compile time (its string bytes owned here), the
/// operator's compare function and instance as plain values (the operators are kept alive by
/// `operators`), so no reference counting, no copy of a string and no conversion on the way.
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

    /// The operator's compare, as the ABI declares it.
    typealias Compare =
        @convention(c) (
            UnsafeMutableRawPointer?, UnsafePointer<hh_value_t>?, UnsafePointer<hh_value_t>?,
            UnsafeMutablePointer<Bool>?
        ) -> hh_status_t

    /// One attribute condition: plain values only (no reference counted field), so that reading it
    /// in the matching loop costs no retain. Its name and value as Swift values are in `names` and
    /// `values` at `name` and its own position.
    struct Condition {
        /// The attribute's name as a number: its position in `names`.
        var name: Int
        /// The trigger's value as operators read it; a string's bytes are in `storage`.
        var value: hh_value_t
        /// Its operator's position in `operators`; -1: none loaded has that name or code.
        var op: Int
        /// In-process operators: the compare function and the instance's handle. Nil: the
        /// operator is isolated (called through `operators[op].compare`) or not found.
        var compare: Compare?
        var instance: UnsafeMutableRawPointer?
    }

    /// Owns the bytes of the trigger values' strings (their `hh_value_t`s point into it) for as
    /// long as any copy of the compiled triggers lives.
    final class Storage {
        let bytes: UnsafeMutableRawBufferPointer
        init(_ count: Int) { bytes = .allocate(byteCount: max(count, 1), alignment: 1) }
        deinit { bytes.deallocate() }
    }

    private(set) var triggers: [Trigger] = []
    private(set) var conditions: [Condition] = []
    /// The distinct attribute names the conditions read, and the conditions' values as loaded
    /// (for the isolated call and for messages).
    private(set) var names: [String] = []
    private(set) var values: [PluginValue] = []
    /// The operators the conditions call, each once.
    private(set) var operators: [TriggerOperatorPlugin] = []
    private(set) var storage = Storage(0)
    /// Custom events' triggers by event name; the others by wire event type (1, 2, 3).
    private(set) var byName: [String: Range<Int>] = [:]
    private(set) var byType: [Int: Range<Int>] = [:]

    init() {}

    init(_ campaigns: [Campaign], operators set: OperatorSet) {
        var named: [String: [(Int, Int)]] = [:]
        var typed: [Int: [(Int, Int)]] = [:]
        for (c, campaign) in campaigns.enumerated() {
            for (t, trigger) in campaign.triggers.enumerated() {
                if trigger.eventType == 4 {
                    named[trigger.eventName, default: []].append((c, t))
                } else {
                    typed[trigger.eventType, default: []].append((c, t))
                }
            }
        }
        var found: [String: Int] = [:]
        var nameIDs: [String: Int] = [:]
        var strings: [(condition: Int, bytes: [UInt8])] = []
        func add(_ positions: [(Int, Int)]) -> Range<Int> {
            let start = triggers.count
            for (c, t) in positions {  // in list order, as the campaigns were loaded
                let trigger = campaigns[c].triggers[t]
                let first = conditions.count
                for attribute in trigger.attributes {
                    if found[attribute.op] == nil {
                        if let op = set.find(attribute.op) {
                            found[attribute.op] =
                                operators.firstIndex { $0 === op }
                                ?? {
                                    operators.append(op)
                                    return operators.count - 1
                                }()
                        } else {
                            found[attribute.op] = -1
                        }
                    }
                    let op = found[attribute.op]!
                    let name =
                        nameIDs[attribute.name]
                        ?? {
                            names.append(attribute.name)
                            nameIDs[attribute.name] = names.count - 1
                            return names.count - 1
                        }()
                    let entry = op >= 0 ? operators[op].inProcessCompare : nil
                    var raw = hh_value_t()
                    switch attribute.value {
                    case .null: raw.type = HH_VALUE_NULL
                    case .string(let text):
                        raw.type = HH_VALUE_STRING  // its bytes are placed below, once all are known
                        strings.append((conditions.count, Array(text.utf8)))
                    case .int(let i):
                        raw.type = HH_VALUE_INT64
                        raw.of.int64 = i
                    case .double(let d):
                        raw.type = HH_VALUE_DOUBLE
                        raw.of.real = d
                    case .bool(let b):
                        raw.type = HH_VALUE_BOOL
                        raw.of.boolean = b
                    case .timeMs(let t):
                        raw.type = HH_VALUE_TIME_MS
                        raw.of.time_ms = t
                    }
                    conditions.append(
                        Condition(
                            name: name, value: raw, op: op,
                            compare: entry?.compare, instance: entry?.instance))
                    values.append(attribute.value)
                }
                triggers.append(
                    Trigger(
                        campaign: c, trigger: t, recorded: trigger.eventType != 1, slot: triggers.count,
                        conditions: first..<conditions.count))
            }
            return start..<triggers.count
        }
        for (name, positions) in named { byName[name] = add(positions) }
        for (type, positions) in typed { byType[type] = add(positions) }
        storage = Storage(strings.reduce(0) { $0 + $1.bytes.count })
        var offset = 0
        for (condition, bytes) in strings {
            let start = storage.bytes.baseAddress! + offset  // never nil: at least one byte is allocated
            if !bytes.isEmpty { bytes.withUnsafeBytes { start.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            conditions[condition].value.of.string = hh_string_t(data: start.assumingMemoryBound(to: CChar.self), length: bytes.count)
            offset += bytes.count
        }
    }
}
