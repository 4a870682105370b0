/// At most one log line per `intervalNs` for a repeated failure, with a count of the ones left out,
/// so a plugin that fails on every event writes a line now and then instead of one per event.
/// Not thread-safe: keep it under its owner's lock.
struct LogRateLimit {
    let intervalNs: UInt64
    private var lastNs: UInt64?
    private var suppressed = 0

    init(seconds: UInt64 = 10) { intervalNs = seconds * 1_000_000_000 }

    /// Whether a line may be written at `nowNs`, and how many were left out since the last one.
    mutating func admit(nowNs: UInt64 = Clock.monotonicNs()) -> (write: Bool, leftOut: Int) {
        if let lastNs, nowNs &- lastNs < intervalNs {
            suppressed += 1
            return (false, 0)
        }
        defer { suppressed = 0 }
        lastNs = nowNs
        return (true, suppressed)
    }
}
