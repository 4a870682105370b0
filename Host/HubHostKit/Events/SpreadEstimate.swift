import Foundation
import Synchronization

/// Whether a run of augmentation work is worth spreading over the cores. Handing part of a run to
/// another thread costs a wake-up and a wait on each side (tens of microseconds of CPU on a small
/// VM), which a few fast plugin calls never earn back: a group commit of 20 one-event requests
/// through in-process plugins is about 10 µs of work. So a run is spread only when the work it is
/// expected to take, from the time per item the last runs took, is above `spreadAboveNs`; slow
/// plugins (I/O, a WebAssembly guest) are still spread, and so is a run before anything was
/// measured.
/// Sendable: `nsPerItem` lives in a Mutex.
final class SpreadEstimate: Sendable {
    /// Expected work above which a run is spread: a few times what the hand-over costs.
    static let spreadAboveNs: UInt64 = 100_000

    /// Nanoseconds one item took, averaged over the last runs (each new run weighs a quarter);
    /// nil until a run was measured.
    private let nsPerItem = Mutex<UInt64?>(nil)

    /// Whether `count` items are expected to take long enough to be spread.
    func worthSpreading(_ count: Int) -> Bool {
        guard count > 1 else { return false }
        guard let perItem = nsPerItem.withLock({ $0 }) else { return true }
        let (expected, overflow) = perItem.multipliedReportingOverflow(by: UInt64(count))
        return overflow || expected > Self.spreadAboveNs
    }

    /// Records that `items` items took `ns` nanoseconds on one thread.
    func record(ns: UInt64, items: Int) {
        guard items > 0 else { return }
        let sample = ns / UInt64(items)
        nsPerItem.withLock { nsPerItem in
            if let old = nsPerItem {
                nsPerItem = old / 4 * 3 + sample / 4
            } else {
                nsPerItem = sample
            }
        }
    }
}
