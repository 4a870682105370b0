import Foundation
import Synchronization

extension PluginHandle {
    /// The most one in-process call of a kind that requests wait on (advertiser id, device
    /// conditions, download request, user id generator, location) may take before the request gets a timeout.
    public static let requestCallDeadlineSeconds: Double = 5

    /// The most one in-process content_provider fetch may take (a catalog document or a bundle
    /// where the caller names no deadline of its own, such as the hub's download_timeout).
    public static let contentCallDeadlineSeconds: Double = 120

    /// What a call that overran its deadline answers.
    static let overranMessage = overranMessage(requestCallDeadlineSeconds)

    static func overranMessage(_ seconds: Double) -> String {
        "no answer within \(seconds < 10 ? String(format: "%.1f", seconds) : "\(Int(seconds))") s: the plugin is stuck in a call, and later calls fail at once until it returns"
    }

    /// Runs `call` (one call into this plugin) on a PluginCallThreads thread and waits for it at
    /// most `seconds` (0.001 to 24 hours): the caller never waits on a plugin without a deadline.
    /// Nil when the call overran: it goes on on its own thread, the plugin is stuck until it
    /// returns (`calls`: health reports it), and meanwhile later calls through here answer nil at
    /// once instead of piling up behind it. Blocks the calling thread: call it from the
    /// BlockingPool, a CLI command or a background thread, never from Swift concurrency.
    public func withDeadline<T: Sendable>(_ seconds: Double, _ call: @escaping @Sendable () -> T) -> T? {
        guard !calls.isStuck else { return nil }
        let limit = min(max(seconds.isFinite ? seconds : 0, 0.001), 86_400)
        let token = calls.begin(deadlineSeconds: limit)
        let outcome = DeadlineOutcome<T>()
        let calls = self.calls
        let span = PluginCallSpan.start(self)  // nil unless tracing is on, inside a trace
        let startedNs = span == nil ? 0 : Clock.monotonicNs()
        PluginCallThreads.run {
            let value = call()
            let late = calls.end(token)
            if let span { PluginCallSpan.end(span, outcome: late ? "late" : "ok", startedNs: startedNs) }
            outcome.finish(value)
        }
        return outcome.wait(seconds: limit)
    }
}

/// The answer of a call with a deadline, handed from the call's thread to the waiting one.
/// Sendable: `value` lives in a Mutex, written before `done` is signalled.
final class DeadlineOutcome<T: Sendable>: Sendable {
    private let value = Mutex<T?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func finish(_ answer: T) {
        value.withLock { $0 = answer }
        done.signal()
    }

    /// The answer, or nil when none came within `seconds`.
    func wait(seconds: Double) -> T? {
        guard done.wait(timeout: .now() + .nanoseconds(Int(SafeTime.durationNs(seconds)))) == .success else { return nil }
        return value.withLock { $0 }
    }
}
