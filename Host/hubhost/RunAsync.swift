import Foundation
import Synchronization

/// Runs `work` on Swift concurrency's threads while the calling thread waits, and rethrows its
/// error. For the commands that run a server (`serve`, `bench floor-server`): the root command
/// stays synchronous, because the validator's child processes run under valgrind, which does not
/// survive an async main. Call it from the main thread, never from a task.
func runAsync(_ work: @escaping @Sendable () async throws -> Void) throws {
    final class Outcome: Sendable { let error = Mutex<Error?>(nil) }  // written by the task before `done`, read after
    let outcome = Outcome()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do { try await work() } catch { outcome.error.withLock { $0 = error } }
        done.signal()
    }
    done.wait()
    if let error = outcome.error.withLock({ $0 }) { throw error }
}
