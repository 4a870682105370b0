import Foundation
import HubHostKit

/// A time budget per plugin call, so a hang is a failed test. A watchdog thread checks the calls in
/// flight; when one overruns, `onOverrun` runs with the call's label. In a test's own child process
/// that ends the process with the failure (the call cannot be stopped otherwise); in-process it is
/// recorded and the test fails when (if) the call returns.
/// Safe to share: `inFlight`, `nextToken`, `overruns` and `stopped` are read and written under `lock`; the rest are
/// `let`s.
public final class CallBudget: @unchecked Sendable {
    public let budgetMs: Int
    private let lock = NSLock()
    private var inFlight: [Int: (label: String, startNs: UInt64)] = [:]
    private var nextToken = 0
    private var overruns: [String] = []
    private var stopped = false
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
        let token: Int = lock.withLock {
            nextToken += 1
            inFlight[nextToken] = (label, Clock.monotonicNs())
            return nextToken
        }
        defer {
            lock.withLock {
                if let call = inFlight.removeValue(forKey: token) {
                    let elapsedMs = Double(Clock.monotonicNs() - call.startNs) / 1e6
                    if elapsedMs > Double(budgetMs) {
                        overruns.append("\(label) took \(String(format: "%.0f", elapsedMs)) ms, over its \(budgetMs) ms budget")
                    }
                }
            }
        }
        return try body()
    }

    /// Calls that overran and returned; empties the list.
    public func takeOverruns() -> [String] {
        lock.withLock {
            defer { overruns = [] }
            return overruns
        }
    }

    public func stop() { lock.withLock { stopped = true } }

    private func watch() {
        var reported = Set<Int>()
        while true {
            usleep(10_000)
            let late: [(Int, String)] = lock.withLock {
                if stopped { return [(-1, "")] }
                // Read the clock under the lock: a call registered after it would start "in the future".
                let now = Clock.monotonicNs()
                return inFlight.filter {
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
