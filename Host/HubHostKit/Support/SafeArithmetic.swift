import Foundation

/// Time and duration arithmetic on numbers that came from outside (HTTP, CLI, files, plugins,
/// network answers) or from a store an older version wrote: none of these conversions can trap.
/// Swift traps on overflow and on converting a non-finite or out-of-range Double to an integer,
/// and one such trap on a stored value puts `serve` into a crash loop, so every conversion of
/// an outside number to a time or a duration goes through here.
package enum SafeTime {
    /// The event times hubhost accepts, in ms since 1970: 1970-01-01T00:00:00.000Z through
    /// 9999-12-31T23:59:59.999Z (what ISO 8601 texts with a four-digit year can say).
    package static let validMs: ClosedRange<Int64> = 0...253_402_300_799_999

    /// The longest duration hubhost works with (100 years, in seconds): timeouts, expirations and
    /// intervals are clamped to it so that adding one to a valid time stays representable.
    package static let maxDurationSeconds: Double = 3_155_760_000

    /// `seconds` as whole milliseconds when it is finite and the result is a valid time; else nil.
    package static func milliseconds(epochSeconds seconds: Double) -> Int64? {
        guard seconds.isFinite else { return nil }
        let ms = (seconds * 1000).rounded(.towardZero)
        guard ms >= Double(validMs.lowerBound), ms <= Double(validMs.upperBound) else { return nil }
        return Int64(ms)
    }

    /// A duration in seconds as milliseconds, clamped to 0...maxDurationSeconds (NaN counts as 0).
    package static func durationMs(_ seconds: Double) -> Int64 {
        Int64(clampedSeconds(seconds) * 1000)
    }

    /// A duration in seconds as nanoseconds, clamped to 0...maxDurationSeconds (NaN counts as 0).
    package static func durationNs(_ seconds: Double) -> UInt64 {
        UInt64(clampedSeconds(seconds) * 1e9)
    }

    static func clampedSeconds(_ seconds: Double) -> Double {
        guard seconds.isFinite || seconds == .infinity else { return 0 }  // NaN, -inf
        return min(max(seconds, 0), maxDurationSeconds)
    }
}

extension Int64 {
    /// `self + other`, stopping at Int64's bounds instead of trapping.
    @inlinable func saturatingAdding(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, stopping at Int64's bounds instead of trapping.
    @inlinable func saturatingSubtracting(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other > 0 ? .min : .max) : difference
    }
}
