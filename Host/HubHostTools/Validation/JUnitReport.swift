import Foundation
import HubHostKit

/// Writes conformance results as JUnit XML, the format CI systems read.
public enum JUnitReport {
    public static func xml(suite: String, results: [ConformanceResult]) -> String {
        let failures = results.filter { $0.outcome == .failed }.count
        let total = results.reduce(0) { $0 + $1.durationMs } / 1000
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"hubhost plugins test\" tests=\"\(results.count)\" failures=\"\(failures)\" time=\"\(seconds(total))\">\n"
        out += "  <testsuite name=\"\(escape(suite))\" tests=\"\(results.count)\" failures=\"\(failures)\" time=\"\(seconds(total))\">\n"
        for result in results {
            let parts = result.name.split(separator: "/", maxSplits: 1).map(String.init)
            let classname = parts.count == 2 ? parts[0] : "library"
            let name = parts.count == 2 ? parts[1] : result.name
            out += "    <testcase classname=\"\(escape(classname))\" name=\"\(escape(name))\" time=\"\(seconds(result.durationMs / 1000))\""
            if result.outcome == .failed {
                let kind = result.timedOut ? "timeout" : result.signal != nil ? "crash" : "failure"
                out +=
                    ">\n      <failure type=\"\(kind)\" message=\"\(escape(result.message))\">\(escape(result.message))</failure>\n    </testcase>\n"
            } else {
                out += "/>\n"
            }
        }
        out += "  </testsuite>\n</testsuites>\n"
        return out
    }

    static func seconds(_ value: Double) -> String { String(format: "%.3f", value) }

    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default:
                // XML 1.0 cannot carry most control characters at all.
                if scalar.value < 0x20 && scalar != "\n" && scalar != "\t" && scalar != "\r" { out += "?" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out
    }
}
