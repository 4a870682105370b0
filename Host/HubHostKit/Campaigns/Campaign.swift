import Foundation

/// One in-app messaging campaign, as the ping response (RInAppMessaging's format) describes it.
public struct Campaign: Codable, Equatable, Sendable {
    public struct Attribute: Codable, Equatable, Sendable {
        public var name: String
        /// The trigger value, typed by the wire attribute type (1 string .. 5 time in ms).
        public var value: PluginValue
        /// The operator's wire code (1..8) as text, or its name for operators without a code.
        public var op: String
    }

    public struct Trigger: Codable, Equatable, Sendable {
        /// Wire event type: 1 app start, 2 login successful, 3 purchase successful, 4 custom.
        public var eventType: Int
        public var eventName: String
        public var attributes: [Attribute]
    }

    public struct Button: Codable, Equatable, Sendable {
        public var text: String
        public var action: Int
        public var uri: String?
    }

    public var id: String
    public var maxImpressions: Int
    public var type: Int
    public var isTest: Bool
    public var title: String
    public var header: String?
    public var body: String?
    public var imageURL: String?
    public var endTimeMillis: Int64?
    public var optOut: Bool
    public var delay: Int
    public var buttons: [Button]
    public var triggers: [Trigger]

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

    public func isExpired(nowMs: Int64) -> Bool { endTimeMillis.map { $0 <= nowMs } ?? false }
}

/// Reads campaigns from a ping response: `{"currentPingMillis":..., "nextPingMillis":...,
/// "data":[{"campaignData":{...}}]}`. An invalid campaign is skipped with its reason, never fatal.
public enum CampaignParser {
    public struct Parsed: Sendable {
        public var campaigns: [Campaign]
        /// "campaign <id or index>: <reason>" for each skipped campaign.
        public var skipped: [String]
        public var nextPingMillis: Int64?
    }

    public struct Problem: Error, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ data: Data) throws -> Parsed {
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw Problem(description: "the campaign list is not a JSON object")
        }
        guard let items = root["data"] as? [Any] else { throw Problem(description: "the campaign list has no \"data\" array") }
        var parsed = Parsed(campaigns: [], skipped: [], nextPingMillis: (root["nextPingMillis"] as? NSNumber)?.int64Value)
        for (index, item) in items.enumerated() {
            let data = (item as? [String: Any])?["campaignData"] as? [String: Any]
            let name = (data?["campaignId"] as? String).map { "campaign \($0)" } ?? "campaign #\(index + 1)"
            do {
                guard let data else { throw Problem(description: "no campaignData object") }
                parsed.campaigns.append(try campaign(data))
            } catch {
                parsed.skipped.append("\(name): \(error)")
            }
        }
        return parsed
    }

    static func campaign(_ d: [String: Any]) throws -> Campaign {
        guard let id = d["campaignId"] as? String, !id.isEmpty else { throw Problem(description: "no campaignId") }
        let payload = d["messagePayload"] as? [String: Any] ?? [:]
        let settings = payload["messageSettings"] as? [String: Any] ?? [:]
        let display = settings["displaySettings"] as? [String: Any] ?? payload["displaySettings"] as? [String: Any] ?? [:]
        let control = settings["controlSettings"] as? [String: Any] ?? [:]
        let buttons = (control["buttons"] as? [[String: Any]] ?? payload["buttons"] as? [[String: Any]] ?? []).map { button in
            let action = button["buttonBehavior"] as? [String: Any] ?? button
            return Campaign.Button(text: button["buttonText"] as? String ?? button["text"] as? String ?? "",
                                   action: (action["action"] as? NSNumber)?.intValue ?? 0, uri: action["uri"] as? String)
        }
        guard let rawTriggers = d["triggers"] as? [[String: Any]], !rawTriggers.isEmpty else {
            throw Problem(description: "no triggers")
        }
        let triggers = try rawTriggers.enumerated().map { index, t -> Campaign.Trigger in
            guard let eventType = (t["eventType"] as? NSNumber)?.intValue, (1...4).contains(eventType) else {
                throw Problem(description: "trigger \(index + 1): eventType must be 1 (app start), 2 (login), 3 (purchase) or 4 (custom); 0 is invalid")
            }
            let eventName = t["eventName"] as? String ?? ""
            if eventType == 4 && eventName.isEmpty { throw Problem(description: "trigger \(index + 1): a custom trigger needs an eventName") }
            let attributes = try (t["attributes"] as? [[String: Any]] ?? []).map { a -> Campaign.Attribute in
                guard let name = a["name"] as? String, !name.isEmpty else { throw Problem(description: "trigger \(index + 1): an attribute has no name") }
                let text = a["value"].map { "\($0)" } ?? ""
                guard let type = (a["type"] as? NSNumber)?.intValue, (1...5).contains(type) else {
                    throw Problem(description: "trigger \(index + 1), attribute '\(name)': type must be 1..5 (string, integer, double, boolean, time); 0 is invalid")
                }
                let op: String
                if let code = (a["operator"] as? NSNumber)?.intValue {
                    guard code != 0 else { throw Problem(description: "trigger \(index + 1), attribute '\(name)': operator 0 is invalid") }
                    op = String(code)
                } else if let named = a["operator"] as? String, !named.isEmpty {
                    op = named
                } else {
                    throw Problem(description: "trigger \(index + 1), attribute '\(name)': no operator")
                }
                return Campaign.Attribute(name: name, value: try value(text, type: type, attribute: name), op: op)
            }
            return Campaign.Trigger(eventType: eventType, eventName: eventName, attributes: attributes)
        }
        return Campaign(id: id, maxImpressions: (d["maxImpressions"] as? NSNumber)?.intValue ?? 1, type: (d["type"] as? NSNumber)?.intValue ?? 1,
                        isTest: d["isTest"] as? Bool ?? false, title: payload["title"] as? String ?? "",
                        header: payload["header"] as? String, body: payload["messageBody"] as? String ?? payload["body"] as? String,
                        imageURL: (settings["displaySettings"] as? [String: Any])?["imageUrl"] as? String ?? payload["imageUrl"] as? String,
                        endTimeMillis: (display["endTimeMillis"] as? NSNumber)?.int64Value,
                        optOut: display["optOut"] as? Bool ?? false, delay: (display["delay"] as? NSNumber)?.intValue ?? 0,
                        buttons: buttons, triggers: triggers)
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
