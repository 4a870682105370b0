import Foundation
import HubHostKit
import Synchronization

/// A time budget per plugin call, so a hang is a failed test. A watchdog thread checks the calls in
/// flight; when one overruns, `onOverrun` runs with the call's label. In a test's own child process
/// that ends the process with the failure (the call cannot be stopped otherwise); in-process it is
/// recorded and the test fails when (if) the call returns.
/// Sendable: the calls in flight, the overruns and the stop flag live in a Mutex; the rest are `let`s.
public final class CallBudget: Sendable {
    public let budgetMs: Int
    private struct State {
        var inFlight: [Int: (label: String, startNs: UInt64)] = [:]
        var nextToken = 0
        var overruns: [String] = []
        var stopped = false
    }
    private let state = Mutex(State())
    private let onOverrun: @Sendable (String) -> Void

    public init(budgetMs: Int, onOverrun: @escaping @Sendable (String) -> Void = { _ in }) {
        self.budgetMs = budgetMs
        self.onOverrun = onOverrun
        let thread = Thread { [weak self] in self?.watch() }
        thread.name = "hubhost.call-budget"
        thread.start()
    }

    /// Runs one plugin call under the budget.
    public func run<T>(_ label: String, _ body: () throws -> T) rethrows -> T {
        let token: Int = state.withLock { state in
            state.nextToken += 1
            state.inFlight[state.nextToken] = (label, Clock.monotonicNs())
            return state.nextToken
        }
        defer {
            state.withLock { state in
                if let call = state.inFlight.removeValue(forKey: token) {
                    let elapsedMs = Double(Clock.monotonicNs() - call.startNs) / 1e6
                    if elapsedMs > Double(budgetMs) {
                        state.overruns.append("\(label) took \(String(format: "%.0f", elapsedMs)) ms, over its \(budgetMs) ms budget")
                    }
                }
            }
        }
        return try body()
    }

    /// Calls that overran and returned; empties the list.
    public func takeOverruns() -> [String] {
        state.withLock { state in
            defer { state.overruns = [] }
            return state.overruns
        }
    }

    public func stop() { state.withLock { $0.stopped = true } }

    private func watch() {
        var reported = Set<Int>()
        while true {
            usleep(10_000)
            let late: [(Int, String)] = state.withLock { state in
                if state.stopped { return [(-1, "")] }
                // Read the clock under the lock: a call registered after it would start "in the future".
                let now = Clock.monotonicNs()
                return state.inFlight.filter {
                    now > $0.value.startNs && now - $0.value.startNs > UInt64(budgetMs) * 1_000_000 && !reported.contains($0.key)
                }
                .map { ($0.key, $0.value.label) }
            }
            if late.first?.0 == -1 { return }
            for (token, label) in late {
                reported.insert(token)
                onOverrun("\(label) did not return within its \(budgetMs) ms budget (a hang?)")
            }
        }
    }
}
