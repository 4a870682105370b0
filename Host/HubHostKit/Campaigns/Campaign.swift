import Foundation

/// One in-app messaging campaign, as the ping response (RInAppMessaging's format) describes it.
public struct Campaign: Codable, Equatable, Sendable {
    /// One condition of a trigger: an event attribute compared with a value by an operator.
    public struct Attribute: Codable, Equatable, Sendable {
        /// The event attribute's name.
        public var name: String
        /// The trigger value, typed by the wire attribute type (1 string .. 5 time in ms).
        public var value: PluginValue
        /// The operator's wire code (1..8) as text, or its name for operators without a code.
        public var op: String
    }

    /// One event the campaign waits for; all of a campaign's triggers must be satisfied.
    public struct Trigger: Codable, Equatable, Sendable {
        /// Wire event type: 1 app start, 2 login successful, 3 purchase successful, 4 custom.
        public var eventType: Int
        /// The custom event's name (custom triggers).
        public var eventName: String
        /// Conditions on the event's attributes; all must hold.
        public var attributes: [Attribute]
    }

    /// A button of the message.
    public struct Button: Codable, Equatable, Sendable {
        /// The button's label.
        public var text: String
        /// 1 redirect, 2 deep link, 3 close (`CampaignParser.buttonActions`); 0 when none was given.
        public var action: Int
        /// The URI a redirect or deep link opens.
        public var uri: String?
        /// The label's colour as the payload gives it (`buttonTextColor`); checked when rendered (`CampaignPreview`).
        public var textColor: String?
        /// The button's colour as the payload gives it (`buttonBackgroundColor`).
        public var backgroundColor: String?
    }

    /// The message's colours as the payload gives them (`titleColor`, `headerColor`,
    /// `messageBodyColor`, `backgroundColor`, `frameColor`): kept as sent, checked when the message
    /// is rendered (`CampaignPreview` shows only `#rgb`, `#rrggbb` and `#rrggbbaa`).
    public struct Colors: Codable, Equatable, Sendable {
        /// The title's text colour (`titleColor`).
        public var title: String?
        /// The header's text colour (`headerColor`).
        public var header: String?
        /// The body text's colour (`messageBodyColor`).
        public var body: String?
        /// The message box's fill (`backgroundColor`).
        public var background: String?
        /// The fill of the screen around the message (`frameColor`).
        public var frame: String?

        /// Colours as given, each a colour text such as `#rrggbb` or nil (not given); none is checked here.
        public init(title: String? = nil, header: String? = nil, body: String? = nil, background: String? = nil, frame: String? = nil) {
            self.title = title
            self.header = header
            self.body = body
            self.background = background
            self.frame = frame
        }

        var isEmpty: Bool { self == Colors() }
    }

    /// The campaign id (`campaignId`), never empty.
    public var id: String
    /// How many times the message may show to a user (1 when not given).
    public var maxImpressions: Int
    /// The display type: 1 modal, 2 full screen, 3 slide-up, 4 HTML (`CampaignParser.campaignTypes`).
    public var type: Int
    /// Whether the service marked this a test campaign.
    public var isTest: Bool
    /// The message title; texts in [brackets] are its `contexts`.
    public var title: String
    /// The message header.
    public var header: String?
    /// The message body.
    public var body: String?
    /// The message image's URL.
    public var imageURL: String?
    /// When the campaign ends (ms since 1970); past it the message never shows.
    public var endTimeMillis: Int64?
    /// Whether the message offers an opt-out (`CampaignEngine.optOut`).
    public var optOut: Bool
    /// The display delay in ms (0 or more).
    public var delay: Int
    /// The message's buttons, in order.
    public var buttons: [Button]
    /// The triggers, never empty.
    public var triggers: [Trigger]
    /// Higher shows first (`priority`, 0 when not given); equal priorities keep the queue's order.
    public var priority: Int = 0
    /// The percent of users the campaign reaches (`rollout`, 0 to 100); nil: every user.
    public var rollout: Double?
    /// The percent of the users reached kept out as a control group (`holdout`, 0 to 100); nil: none.
    public var holdout: Double?
    /// The message's colours; nil when the payload gives none.
    public var colors: Colors?
    /// Where a slide-up message comes in from (`displaySettings.slideFrom`): 1 bottom, 2 top, 3 left,
    /// 4 right (`CampaignParser.slideDirections`); nil when not given.
    public var slideFrom: Int?

    /// The contexts of the title: the texts in [brackets], e.g. "[ctx1] Summer" -> ["ctx1"].
    public var contexts: [String] {
        var found: [String] = []
        var rest = Substring(title)
        while let open = rest.firstIndex(of: "["), let close = rest[open...].firstIndex(of: "]") {
            found.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return found
    }

    /// Whether `endTimeMillis` is at or before `nowMs`.
    public func isExpired(nowMs: Int64) -> Bool { endTimeMillis.map { $0 <= nowMs } ?? false }
}

/// Reads campaigns from a ping response: `{"currentPingMillis":..., "nextPingMillis":...,
/// "data":[{"campaignData":{...}}]}`. An invalid campaign is skipped with its reason, never fatal.
///
/// Every field is checked for its JSON type and range, and a refusal names the value actually sent
/// (`maxImpressions must be an integer from 1 to 2147483647; got "three" (a string)`): nothing is
/// converted silently (no string taken for a number, no 2.5 cut to 2, no default for a wrong type).
public enum CampaignParser {
    /// A parsed ping response.
    public struct Parsed: Sendable {
        /// The valid campaigns, in the list's order.
        public var campaigns: [Campaign]
        /// "campaign <id or index>: <reason>" for each skipped campaign.
        public var skipped: [String]
        /// When to ping next, in ms from now; nil when absent or invalid.
        public var nextPingMillis: Int64?
    }

    /// Why a list, a campaign or a configuration answer was refused.
    public struct Problem: Error, CustomStringConvertible {
        /// The reason, naming the field and the value sent.
        public var description: String
    }

    /// The most impressions a campaign may ask for.
    public static let maxImpressionsLimit: Int64 = Int64(Int32.max)
    /// The highest `priority` (and the lowest, negated).
    public static let priorityLimit: Int64 = 1_000_000
    /// Campaign `type`: the message's display type (RInAppMessaging's CampaignDisplayType; 0 is invalid).
    public static let campaignTypes: [Int64: String] = [1: "modal", 2: "full screen", 3: "slide-up", 4: "HTML"]
    /// Trigger `type`: what triggers it (RInAppMessaging's CampaignTriggerType; 0 is invalid).
    public static let triggerTypes: [Int64: String] = [1: "event"]
    /// Trigger `eventType`.
    public static let eventTypes: [Int64: String] = [1: "app start", 2: "login successful", 3: "purchase successful", 4: "custom"]
    /// A button's `action` (RInAppMessaging's ActionType; 0 is invalid).
    public static let buttonActions: [Int64: String] = [1: "redirect", 2: "deep link", 3: "close"]
    /// `displaySettings.slideFrom`: where a slide-up message comes in from (RInAppMessaging's SlideDirection).
    public static let slideDirections: [Int64: String] = [1: "bottom", 2: "top", 3: "left", 4: "right"]
    /// Attribute `type`.
    public static let attributeTypes: [Int64: String] = [1: "string", 2: "integer", 3: "double", 4: "boolean", 5: "time in ms"]

    /// Parses a ping response; invalid campaigns go to `skipped`. Throws Problem only when the
    /// whole response is unusable (not a JSON object, no `data` array).
    public static func parse(_ data: Data) throws -> Parsed {
        guard case .object(let root)? = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw Problem(description: "the campaign list is not a JSON object")
        }
        guard case .array(let items)? = root["data"] else { throw Problem(description: "the campaign list has no \"data\" array") }
        var nextPing: Int64?
        if case .number(let next)? = root["nextPingMillis"], next == next.rounded(), next >= 0, next <= 9e15 { nextPing = Int64(next) }
        var parsed = Parsed(campaigns: [], skipped: [], nextPingMillis: nextPing)
        for (index, item) in items.enumerated() {
            var data: [String: JSONValue]?
            if case .object(let wrapper) = item, case .object(let campaignData)? = wrapper["campaignData"] { data = campaignData }
            var name = "campaign #\(index + 1)"
            if case .string(let id)? = data?["campaignId"], !id.isEmpty { name = "campaign \(id)" }
            do {
                guard let data else { throw Problem(description: "no campaignData object") }
                parsed.campaigns.append(try campaign(data))
            } catch {
                parsed.skipped.append("\(name): \(error)")
            }
        }
        return parsed
    }

    /// What the configuration endpoint answered: whether in-app messaging is enabled, and the ping
    /// endpoint it names. Two shapes are read: the In-App Messaging service's own
    /// `{"data": {"enabled": true, "endpoints": {"ping": "https://..."}, ...}}` and the flat
    /// `{"enabled": true, "pingUrl": "https://..."}`. `enabled` absent means enabled.
    public static func config(_ data: Data) throws -> (enabled: Bool, pingURL: String?) {
        guard case .object(let root)? = try? JSONDecoder().decode(JSONValue.self, from: data) else {
            throw Problem(description: "config endpoint: the answer is not a JSON object")
        }
        var fields = Fields(object: root, context: "config endpoint: ")
        if root["data"] != nil, let inner = try fields.object("data") { fields = inner }
        let enabled = try fields.bool("enabled") ?? true
        let ping = try fields.object("endpoints")?.string("ping") ?? fields.string("pingUrl")
        return (enabled, ping.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// Typed reads of one JSON object's fields; each refusal names the field and the value sent.
    struct Fields {
        var object: [String: JSONValue]
        /// Prefix of messages, e.g. "trigger 1: ".
        var context: String
        /// Prefix of the keys, e.g. "messagePayload.".
        var path = ""

        func fail(_ key: String, _ expected: String, _ value: JSONValue) -> Problem {
            var kind = ""
            switch value {
            case .null, .number: break
            default: kind = " (\(value.kindName))"
            }
            return Problem(description: "\(context)\(path)\(key) must be \(expected); got \(value.jsonText)\(kind)")
        }

        func string(_ key: String, required: Bool = false, nonEmpty: Bool = false) throws -> String? {
            guard let value = object[key] else {
                if required { throw Problem(description: "\(context)missing \(path)\(key) (a string)") }
                return nil
            }
            guard case .string(let text) = value, !(nonEmpty && text.isEmpty) else {
                throw fail(key, nonEmpty ? "a non-empty string" : "a string", value)
            }
            return text
        }

        func bool(_ key: String) throws -> Bool? {
            guard let value = object[key] else { return nil }
            guard case .bool(let flag) = value else { throw fail(key, "true or false", value) }
            return flag
        }

        /// An integer in `range`, or one of `choices` (code -> meaning) when given.
        func int(_ key: String, in range: ClosedRange<Int64>, choices: [Int64: String]? = nil, required: Bool = false) throws -> Int64? {
            let expected: String
            if let choices {
                let listed = choices.keys.sorted().map { "\($0) (\(choices[$0]!))" }
                expected = "an integer: " + (listed.count == 1 ? listed[0] : listed.dropLast().joined(separator: ", ") + " or " + listed.last!)
            } else {
                expected = "an integer from \(range.lowerBound) to \(range.upperBound)"
            }
            guard let value = object[key] else {
                if required { throw Problem(description: "\(context)missing \(path)\(key) (\(expected))") }
                return nil
            }
            guard case .number(let number) = value, number == number.rounded(), number >= Double(range.lowerBound),
                number <= Double(range.upperBound),
                choices.map({ $0[Int64(number)] != nil }) ?? true
            else {
                throw fail(key, expected, value)
            }
            return Int64(number)
        }

        func object(_ key: String, required: Bool = false) throws -> Fields? {
            guard let value = object[key] else {
                if required { throw Problem(description: "\(context)missing \(path)\(key) (an object)") }
                return nil
            }
            guard case .object(let inner) = value else { throw fail(key, "an object", value) }
            return Fields(object: inner, context: context, path: path + key + ".")
        }

        /// A number (integer or not) in `range`, e.g. a percent.
        func number(_ key: String, in range: ClosedRange<Double>) throws -> Double? {
            guard let value = object[key] else { return nil }
            guard case .number(let number) = value, number.isFinite, range.contains(number) else {
                throw fail(key, "a number from \(Int64(range.lowerBound)) to \(Int64(range.upperBound))", value)
            }
            return number
        }

        func array(_ key: String) throws -> [JSONValue]? {
            guard let value = object[key] else { return nil }
            guard case .array(let items) = value else { throw fail(key, "an array", value) }
            return items
        }
    }

    static func campaign(_ d: [String: JSONValue]) throws -> Campaign {
        let fields = Fields(object: d, context: "")
        guard let id = try fields.string("campaignId", required: true, nonEmpty: true) else { throw Problem(description: "no campaignId") }
        let maxImpressions = try fields.int("maxImpressions", in: 1...maxImpressionsLimit) ?? 1
        let type = try fields.int("type", in: 1...4, choices: campaignTypes) ?? 1
        let isTest = try fields.bool("isTest") ?? false
        let priority = try fields.int("priority", in: -priorityLimit...priorityLimit) ?? 0
        let rollout = try fields.number("rollout", in: 0...100)
        let holdout = try fields.number("holdout", in: 0...100)

        guard let payload = try fields.object("messagePayload", required: true) else { throw Problem(description: "missing messagePayload") }
        let payloadFields = payload
        let title = try payloadFields.string("title", required: true) ?? ""
        let header = try payloadFields.string("header")
        let body = try payloadFields.string("messageBody") ?? payloadFields.string("body")
        let settings = try payloadFields.object("messageSettings")
        let display = try settings?.object("displaySettings") ?? payloadFields.object("displaySettings")
        let control = try settings?.object("controlSettings")
        let imageURL = try display?.string("imageUrl") ?? payloadFields.object("resource")?.string("imageUrl") ?? payloadFields.string("imageUrl")
        let slideFrom = try display?.int("slideFrom", in: 1...4, choices: slideDirections)
        let colors = Campaign.Colors(
            title: try payloadFields.string("titleColor"), header: try payloadFields.string("headerColor"),
            body: try payloadFields.string("messageBodyColor"), background: try payloadFields.string("backgroundColor"),
            frame: try payloadFields.string("frameColor"))
        let endTimeMillis = try display?.int("endTimeMillis", in: 0...Int64(9e15))
        let optOut = try display?.bool("optOut") ?? false
        let delay = try display?.int("delay", in: 0...Int64(Int32.max)) ?? 0
        let rawButtons = try control?.array("buttons") ?? payloadFields.array("buttons") ?? []
        let buttons = try rawButtons.enumerated().map { index, item -> Campaign.Button in
            guard case .object(let button) = item else { throw Fields(object: [:], context: "").fail("button \(index + 1)", "an object", item) }
            let buttonFields = Fields(object: button, context: "button \(index + 1): ")
            let behavior = try buttonFields.object("buttonBehavior") ?? buttonFields
            return Campaign.Button(
                text: try buttonFields.string("buttonText") ?? buttonFields.string("text") ?? "",
                action: Int(try behavior.int("action", in: 1...3, choices: buttonActions) ?? 0), uri: try behavior.string("uri"),
                textColor: try buttonFields.string("buttonTextColor"), backgroundColor: try buttonFields.string("buttonBackgroundColor"))
        }

        guard let rawTriggers = try fields.array("triggers"), !rawTriggers.isEmpty else { throw Problem(description: "no triggers") }
        let triggers = try rawTriggers.enumerated().map { index, item -> Campaign.Trigger in
            guard case .object(let t) = item else { throw Fields(object: [:], context: "").fail("trigger \(index + 1)", "an object", item) }
            let trigger = Fields(object: t, context: "trigger \(index + 1): ")
            _ = try trigger.int("type", in: 1...1, choices: triggerTypes)
            guard let eventType = try trigger.int("eventType", in: 1...4, choices: eventTypes, required: true) else {
                throw Problem(description: "no eventType")
            }
            let eventName = try trigger.string("eventName") ?? ""
            if eventType == 4 && eventName.isEmpty { throw Problem(description: "trigger \(index + 1): a custom trigger needs an eventName") }
            let attributes = try (trigger.array("attributes") ?? []).enumerated().map { position, item -> Campaign.Attribute in
                guard case .object(let a) = item else { throw trigger.fail("attributes[\(position)]", "an object", item) }
                let attribute = Fields(object: a, context: "trigger \(index + 1), attribute \(position + 1): ")
                guard let name = try attribute.string("name", required: true, nonEmpty: true) else { throw Problem(description: "no name") }
                let named = Fields(object: a, context: "trigger \(index + 1), attribute '\(name)': ")
                guard let type = try named.int("type", in: 1...5, choices: attributeTypes, required: true) else {
                    throw Problem(description: "no type")
                }
                let text: String
                switch a["value"] {
                case .string(let s)?: text = s
                case .number?, .bool?: text = a["value"]!.jsonText
                case nil: throw Problem(description: "trigger \(index + 1), attribute '\(name)': missing value")
                case let other?: throw named.fail("value", "a string (or a number or boolean)", other)
                }
                let op: String
                switch a["operator"] {
                case .number?: op = String(try named.int("operator", in: 1...Int64(Int32.max))!)
                case .string(let opName)? where !opName.isEmpty: op = opName
                case nil: throw Problem(description: "trigger \(index + 1), attribute '\(name)': no operator")
                case let other?: throw named.fail("operator", "a wire code from 1 (0 is invalid) or an operator's name", other)
                }
                return Campaign.Attribute(name: name, value: try value(text, type: Int(type), attribute: name), op: op)
            }
            return Campaign.Trigger(eventType: Int(eventType), eventName: eventName, attributes: attributes)
        }
        return Campaign(
            id: id, maxImpressions: Int(maxImpressions), type: Int(type), isTest: isTest, title: title,
            header: header, body: body, imageURL: imageURL, endTimeMillis: endTimeMillis,
            optOut: optOut, delay: Int(delay), buttons: buttons, triggers: triggers, priority: Int(priority), rollout: rollout,
            holdout: holdout, colors: colors.isEmpty ? nil : colors, slideFrom: slideFrom.map { Int($0) })
    }

    static func value(_ text: String, type: Int, attribute: String) throws -> PluginValue {
        switch type {
        case 1: return .string(text)
        case 2:
            guard let i = Int64(text) else { throw Problem(description: "attribute '\(attribute)': '\(text)' is not an integer") }
            return .int(i)
        case 3:
            guard let d = Double(text) else { throw Problem(description: "attribute '\(attribute)': '\(text)' is not a double") }
            return .double(d)
        case 4:
            guard let b = Bool(text.lowercased()) else { throw Problem(description: "attribute '\(attribute)': '\(text)' is not true or false") }
            return .bool(b)
        default:
            guard let t = Int64(text) else { throw Problem(description: "attribute '\(attribute)': '\(text)' is not a time in milliseconds") }
            return .timeMs(t)
        }
    }
}
