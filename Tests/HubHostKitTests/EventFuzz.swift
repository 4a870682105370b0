import Foundation
import GRDB
import PluginTestKit
import XCTest

@testable import HubHostKit

/// (b) Event JSON (`POST /v1/events`, `track --stdin`) through EventInput.parse, with values at
/// every numeric boundary, wrong types, deep nesting and huge keys. What it accepts must pass the
/// limits and be storable: every 5th accepted input is tracked into a real store.
final class EventFuzz: FuzzTarget {
    let seeds: [[UInt8]]
    var host: HubHost?
    var accepted = 0, tracked = 0

    static let numbers = [
        "0", "-0", "1", "-1", "0.5", "1.5", "-0.0", "1E5", "1e+300", "1e300", "-1e300", "1e308", "-1e308",
        "1.7976931348623157e308", "2e308", "-2e308", "4.9e-324", "1e-400", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
        "99999999999999999999999999999", "253402300799999", "253402300800000", "253402300799999.5", "9007199254740993",
        "1402358400000", "-1402358400000", "1e15", "2147483647", "2147483648", "-2147483649", "0.1e1", "1.0"
    ]
    static let strings = [
        "", "NaN", "nan", "Infinity", "-Infinity", "inf", "1e300", "-9223372036854775808", "9223372036854775808",
        "2014-06-10T00:00:00Z", "2014-06-10T00:00:00.000Z", "10000-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z",
        "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "9999-12-31T23:59:60Z", "2014-13-45T99:99:99Z",
        "\\u0000", "\\ud800", "\\udfff\\ud800", "🎉", "e\\u0301", "é", "USD", "usd", "XXX", "$", "app_start", "17",
        "named_event", "purchase_successful", "time", "int", "double", "bool", "null", "string", "type", "value"
    ]
    static let fieldNames = [
        "type", "name", "timestamp", "attributes", "id", "purchase", "events", "value", "amount", "currency_code",
        "item_list", "number_of_items", "Typ", "", "Session Duration", "CurrentCampaign", "CampaignEndTimeStamp"
    ]
    static let types = [
        "named_event", "app_start", "login_successful", "purchase_successful", "custom", "installed", "session_started",
        "session_ended", "goal_abandoned", "goal_completed", "notification_received", "notification_opened",
        "12", "13", "14", "17", "48", "49", "0", "-1", "APP_START", "app_strat"
    ]

    override init(name: String, work: String) throws {
        seeds = try Self.seeds("events", ending: ".json")
        try super.init(name: name, work: work)
        for seed in seeds { _ = try EventInput.parse(Data(seed)) }  // the seeds are valid
        try TestSupport.write("data_dir: data\nevents: {cache_size: 100000}\nplugins: []\n", to: work + "/plugins.yaml")
        host = try HubHost(manifestPath: work + "/plugins.yaml")
    }

    override func finish() {
        host?.shutdown()
        print("fuzz events: \(accepted) inputs accepted, \(tracked) of them tracked into the store")
    }

    func value(_ random: inout FuzzRandom, depth: Int = 0) -> String {
        switch random.int(0...11) {
        case 0, 1: return random.pick(Self.numbers)
        case 2, 3: return "\"" + random.pick(Self.strings) + "\""
        case 4: return random.pick(["true", "false", "null", "[]", "{}"])
        case 5:
            return
                #"{"type": "\#(random.pick(["time", "int", "double", "bool", "string", "null", "list", ""]))", "value": \#(value(&random, depth: depth + 1))}"#
        case 6 where depth < 3: return "[" + (0..<random.int(0...3)).map { _ in value(&random, depth: depth + 1) }.joined(separator: ",") + "]"
        case 7 where depth < 3:
            return "{"
                + (0..<random.int(0...3)).map { _ in "\"\(random.pick(Self.fieldNames))\": \(value(&random, depth: depth + 1))" }.joined(
                    separator: ",") + "}"
        case 8:
            let depth = random.chance(95) ? random.pick([10, 100, 1000]) : random.pick([10_000, 100_000])
            return random.chance(50)
                ? String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
                : String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
        case 9:
            return "\""
                + String(
                    repeating: random.pick(["a", "é", "🎉", "\\\"", "\\u0000"]),
                    count: random.chance(95) ? random.pick([127, 128, 129, 1024, 1025]) : 70_000) + "\""
        default: return "\"" + random.pick(Self.strings) + "\""
        }
    }

    /// Boundary values that should be accepted: what a tame event is made of.
    static let tameNumbers = [
        "0", "-0", "1", "-1", "0.5", "1e300", "-1e300", "1.7976931348623157e308", "4.9e-324", "9223372036854775807",
        "-9223372036854775808", "9007199254740993", "253402300799999", "1402358400000", "1e15", "-0.0"
    ]
    static let tameTimestamps = [
        "0", "1", "253402300799999", "1402358400000", "253402300799999.0", "\"2014-06-10T00:00:00Z\"",
        "\"9999-12-31T23:59:59.999Z\"", "\"1970-01-01T00:00:00Z\"", "\"253402300799999\""
    ]

    func tameValue(_ random: inout FuzzRandom) -> String {
        switch random.int(0...6) {
        case 0: return random.pick(Self.tameNumbers)
        case 1: return "\"" + random.pick(Self.strings) + "\""
        case 2: return random.pick(["true", "false", "null"])
        case 3: return #"{"type": "time", "value": \#(random.pick(Self.tameTimestamps))}"#
        case 4: return #"{"type": "int", "value": \#(random.pick(["0", "-9223372036854775808", "9223372036854775807", "9007199254740993", "1e18"]))}"#
        case 5: return #"{"type": "double", "value": \#(random.pick(Self.tameNumbers))}"#
        default: return "\"" + String(repeating: random.pick(["a", "é", "🎉"]), count: random.int(0...300)) + "\""
        }
    }

    func event(_ random: inout FuzzRandom) -> String {
        var fields: [String] = []
        // Half the events are tame (boundary values that should pass), so that much is accepted and stored.
        let tame = random.chance(50)
        if random.chance(60) {
            fields.append(
                #""type": \#(random.chance(tame ? 100 : 80) ? "\"" + random.pick(Array(Self.types.prefix(tame ? 18 : 100))) + "\"" : value(&random))"#
            )
        }
        if random.chance(70) { fields.append(#""name": \#(random.chance(tame ? 100 : 80) ? "\"E\(random.int(0...9))\"" : value(&random))"#) }
        if random.chance(60) {
            fields.append(
                #""timestamp": \#(tame ? random.pick(Self.tameTimestamps) : random.chance(70) ? random.pick(Self.numbers) : value(&random))"#)
        }
        if random.chance(40) {
            let id =
                random.chance(tame ? 100 : 80)
                ? "\"fz-\(random.next())\""
                : (random.chance(50) ? "\"" + String(repeating: "i", count: random.pick([128, 129])) + "\"" : value(&random))
            fields.append(#""id": \#(id)"#)
        }
        if random.chance(70) {
            let count = random.chance(5) ? random.pick([999, 1000, 1001]) : random.int(0...8)
            var names = Set<String>()
            let attributes = (0..<count).compactMap { i -> String? in
                let name: String
                switch tame ? 9 : random.int(0...39) {
                case 0: name = ""
                case 1: name = String(repeating: "k", count: count > 100 ? 1025 : random.pick([1024, 1025, 100_000]))
                case 2: name = "Session Duration"
                case 3: name = "é\(i)"
                default: name = "a\(i)"
                }
                guard names.insert(name).inserted else { return nil }
                return "\"\(name)\": \(count > 100 ? random.pick(Self.numbers) : tame ? tameValue(&random) : value(&random))"
            }
            fields.append(#""attributes": {\#(attributes.joined(separator: ","))}"#)
        }
        if tame { return "{" + fields.joined(separator: ", ") + "}" }
        if random.chance(15) {
            fields.append(
                #""purchase": {"amount": \#(random.pick(Self.numbers)), "currency_code": \#(value(&random)), "item_list": \#(random.chance(50) ? #"["a","b"]"# : value(&random))\#(random.chance(40) ? #", "number_of_items": \#(random.pick(Self.numbers))"# : "")}"#
            )
        }
        if random.chance(5) { fields.append("\"\(random.pick(Self.fieldNames))\": \(value(&random))") }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    override func input(_ index: Int) -> Data {
        var random = FuzzRandom(target: name, index: index)
        if index % 1000 == 3 {
            // The events-per-input limit (10,000 and one more) on a few fixed cases only: each takes a while.
            return Data(("[" + Array(repeating: #"{"name":"n"}"#, count: 10_000 + index / 1000 % 2).joined(separator: ",") + "]").utf8)
        }
        switch random.int(0...9) {
        case 0, 1, 2:
            return Data(
                Mutator.mutate(
                    random.pick(seeds), &random,
                    dictionary: Self.numbers + Self.strings.map { "\"\($0)\"" } + [",", ":", "[", "]", "{", "}", "\"", "\\"], others: seeds))
        case 3:
            let count = random.int(0...20)
            return Data((random.chance(50) ? "[" : #"{"events": ["#).utf8)
                + Data((0..<count).map { _ in count > 100 ? "{}" : event(&random) }.joined(separator: ",").utf8)
                + Data((random.chance(50) ? "]" : "]}").utf8)
        case 4: return Data(value(&random).utf8)
        default: return Data(event(&random).utf8)
        }
    }

    /// Every plain JSON number given as an attribute is stored as that number (an integer that no
    /// longer fits in 64 bits may become a double, but never another integer, e.g. negative).
    static func numbersKept(_ input: Data, _ events: [Event]) -> String? {
        guard let json = try? JSONSerialization.jsonObject(with: input, options: [.fragmentsAllowed]) else { return nil }
        let objects: [Any] = (json as? [Any]) ?? ((json as? [String: Any])?["events"] as? [Any]) ?? [json]
        for (object, event) in zip(objects, events) {
            guard let attributes = (object as? [String: Any])?["attributes"] as? [String: Any] else { continue }
            for (name, raw) in attributes {
                guard let number = raw as? NSNumber, String(cString: number.objCType) != "c",
                    let stored = event.attributes.first(where: { $0.name == name })?.value
                else { continue }
                let sent = number.doubleValue
                let kept: Double
                switch stored {
                case .int(let value): kept = Double(value)
                case .double(let value): kept = value
                default: return "attribute '\(name)': the number \(number) was stored as \(stored)"
                }
                if abs(kept - sent) > abs(sent) * 1e-9 + 1 { return "attribute '\(name)': the number \(number) was stored as \(stored)" }
            }
        }
        return nil
    }

    override func check(_ input: Data, index: Int) -> String? {
        let events: [Event]
        do { events = try EventInput.parse(input) } catch is EventInput.Problem { return nil } catch {
            return "EventInput.parse threw \(type(of: error)), not EventInput.Problem: \(error)"
        }
        accepted += 1
        if let problem = Self.numbersKept(input, events) { return problem }
        for (number, event) in events.enumerated() {
            do { try EventLimits.check(event) } catch { return "parse accepted an event the limits refuse: \(error)" }
            guard SafeTime.validMs.contains(event.timestampMs) else { return "parse accepted timestamp \(event.timestampMs)" }
            for attribute in event.attributes {
                switch attribute.value {
                case .double(let d) where !d.isFinite: return "parse accepted a non-finite double in '\(attribute.name)'"
                case .timeMs(let t) where !SafeTime.validMs.contains(t): return "parse accepted time \(t) in '\(attribute.name)'"
                default: break
                }
            }
            if number < 20, (try? JSONEncoder().encode(EventView(event))) == nil { return "the accepted event cannot be answered as JSON" }
        }
        if accepted % 3 == 0, let engine = try? host?.events() {
            do {
                _ = try engine.trackBatch(events)
                tracked += 1
            } catch is EventEngine.DuplicateEventID {
            } catch {
                return "parse accepted \(events.count) events that trackBatch refused: \(error)"
            }
        }
        return nil
    }
}
