import Foundation

/// Milliseconds since the epoch as ISO 8601 UTC text to the second (`2014-06-10T00:00:00Z`), the
/// text ISO8601DateFormatter's default options print, computed with integer arithmetic (the civil
/// calendar from a day count, H. Hinnant's algorithm). Every event view prints one: creating an
/// ISO8601DateFormatter per event was about a third of `POST /v1/events`' CPU time.
package enum UTCTimestamp {
    package static func text(ms: Int64) -> String {
        // Outside 0000-9999 (a value an older version stored) the formatter still prints it.
        guard SafeTime.validMs.contains(ms) else {
            return ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
        }
        let seconds = ms / 1000
        let secondOfDay = seconds % 86_400
        let (year, month, day) = civilDate(days: seconds / 86_400)
        var bytes = [UInt8]()
        bytes.reserveCapacity(20)
        func put(_ value: Int64, digits: Int) {
            var divisor: Int64 = 1
            for _ in 1..<digits { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                rest %= divisor
                divisor /= 10
            }
        }
        put(year, digits: 4)
        bytes.append(UInt8(ascii: "-"))
        put(month, digits: 2)
        bytes.append(UInt8(ascii: "-"))
        put(day, digits: 2)
        bytes.append(UInt8(ascii: "T"))
        put(secondOfDay / 3600, digits: 2)
        bytes.append(UInt8(ascii: ":"))
        put(secondOfDay / 60 % 60, digits: 2)
        bytes.append(UInt8(ascii: ":"))
        put(secondOfDay % 60, digits: 2)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Days since 1970-01-01 (0 or more) as a civil date in the proleptic Gregorian calendar: eras
    /// of 400 years starting on March 1st, H. Hinnant's civil_from_days.
    static func civilDate(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = shifted / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
