import Foundation

/// Threads for calls into plugins that may never return: never Dispatch's global pool, which Swift
/// concurrency and so the HTTP server run on (on Linux a queue made with DispatchQueue(label:) runs
/// there too, and it has as many threads as cores: two looping calls on it once stopped every
/// route of `hubhost serve` on a 2-core machine). A job starts at once on an idle thread, or on a
/// new one when none is idle, so a thread held by a call that never returns never delays another
/// job. Up to `idleLimit` finished threads wait for the next job; more end.
package enum PluginCallThreads {
    /// The threads' name, as `top -H` and /proc show it (`ThreadName`).
    package static let threadName = "hubhost-plugins"

    /// Finished threads kept waiting for work (a thread is cheap to keep, dearer to start).
    static let idleLimit = 8

    private static let condition = NSCondition()
    nonisolated(unsafe) private static var jobs: [@Sendable () -> Void] = []  // under `condition`
    nonisolated(unsafe) private static var idle = 0  // under `condition`
    nonisolated(unsafe) private static var started = 0  // under `condition`: threads alive

    /// Runs `job` on a thread of this pool; returns at once.
    static func run(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        let spawn = idle < jobs.count
        if spawn { started += 1 }
        condition.signal()
        condition.unlock()
        if spawn {
            let thread = Thread {
                ThreadName.set(threadName)
                work()
            }
            thread.name = Self.threadName
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Threads alive now (busy or idle): what a test checks for a pile-up.
    static var threadCount: Int { condition.withLock { started } }

    private static func work() {
        condition.lock()
        while true {
            while jobs.isEmpty {
                if idle >= idleLimit {
                    started -= 1
                    condition.unlock()
                    return
                }
                idle += 1
                condition.wait()
                idle -= 1
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
            condition.lock()
        }
    }
}
