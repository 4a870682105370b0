import Foundation

/// Time sources used across the host.
public enum Clock {
    /// Wall time in milliseconds since 1970-01-01T00:00:00Z.
    public static func wallMs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// A monotonic clock in nanoseconds, for durations and timeouts.
    public static func monotonicNs() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
