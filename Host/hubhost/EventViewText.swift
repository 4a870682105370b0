import Foundation
import HubHostKit

/// How `track`, `events list`, `open-url` and `notifications` print an event for people; `config show`
/// prints its values the same way.
extension EventView {
    func printText() {
        print("\(id)  \(status)  \(type) (\(typeCode))\(name.isEmpty ? "" : " \"\(name)\"")  \(timestamp)")
        for (key, value) in attributes.sorted(by: { $0.key < $1.key }) { print("    \(key): \(value.text)") }
        if let lastError { print("    last error: \(lastError)") }
    }
}

extension JSONValue {
    var text: String {
        switch self {
        case .null: return "null"
        case .string(let s): return s
        case .number(let d): return d == d.rounded() && abs(d) < 9e15 ? String(Int64(d)) : String(d)
        case .bool(let b): return String(b)
        case .array(let a): return "[" + a.map(\.text).joined(separator: ", ") + "]"
        case .object(let o): return "{" + o.map { "\($0.key): \($0.value.text)" }.joined(separator: ", ") + "}"
        }
    }
}
