import Foundation

/// A user's campaign cache as JSON, written by hand: every change of campaign state writes the
/// whole cache, and with 10,000 campaigns JSONEncoder took as long as matching 100,000 events
/// (callgrind, `bench campaigns`). It is read back with JSONDecoder (UserCache's Codable form, the
/// same keys and shapes; a test reads it back and compares).
extension UserCache {
    var json: String {
        var out = [UInt8]()
        out.reserveCapacity(64 + (impressionsLeft.count + knownMaxImpressions.count) * 24 + satisfied.count * 24 + queue.count * 16)
        func comma(_ first: inout Bool) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
        }
        func key(_ name: String) {
            CollectorJSON.string(name, into: &out)
            out.append(UInt8(ascii: ":"))
        }
        func counts(_ values: [String: Int]) {
            out.append(UInt8(ascii: "{"))
            var first = true
            for (id, count) in values {
                comma(&first)
                key(id)
                out.append(contentsOf: String(count).utf8)
            }
            out.append(UInt8(ascii: "}"))
        }
        func strings<S: Sequence<String>>(_ values: S) {
            out.append(UInt8(ascii: "["))
            var first = true
            for value in values {
                comma(&first)
                CollectorJSON.string(value, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "{"))
        key("impressionsLeft")
        counts(impressionsLeft)
        out.append(UInt8(ascii: ","))
        key("knownMaxImpressions")
        counts(knownMaxImpressions)
        out.append(UInt8(ascii: ","))
        key("optedOut")
        strings(optedOut)
        out.append(UInt8(ascii: ","))
        key("satisfied")
        out.append(UInt8(ascii: "{"))
        var first = true
        for (id, triggers) in satisfied {
            comma(&first)
            key(id)
            out.append(UInt8(ascii: "["))
            var firstTrigger = true
            for trigger in triggers {
                comma(&firstTrigger)
                out.append(contentsOf: String(trigger).utf8)
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "}"))
        out.append(UInt8(ascii: ","))
        key("queue")
        strings(queue)
        if let current {
            out.append(UInt8(ascii: ","))
            key("current")
            CollectorJSON.string(current, into: &out)
        }
        if let shownAt {
            out.append(UInt8(ascii: ","))
            key("shownAt")
            out.append(UInt8(ascii: "["))
            var first = true
            for time in shownAt {
                comma(&first)
                out.append(contentsOf: String(time).utf8)
            }
            out.append(UInt8(ascii: "]"))
        }
        if let lastShownAt {
            out.append(UInt8(ascii: ","))
            key("lastShownAt")
            out.append(UInt8(ascii: "{"))
            var first = true
            for (id, time) in lastShownAt {
                comma(&first)
                key(id)
                out.append(contentsOf: String(time).utf8)
            }
            out.append(UInt8(ascii: "}"))
        }
        if let session {
            out.append(UInt8(ascii: ","))
            key("session")
            out.append(contentsOf: "{\"startMs\":\(session.startMs),\"count\":\(session.count)}".utf8)
        }
        if let later {
            out.append(UInt8(ascii: ","))
            key("later")
            strings(later)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
