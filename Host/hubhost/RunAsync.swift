import Foundation

/// Runs `work` on Swift concurrency's threads while the calling thread waits, and rethrows its
/// error. For the commands that run a server (`serve`, `bench floor-server`): the root command
/// stays synchronous, because the validator's child processes run under valgrind, which does not
/// survive an async main. Call it from the main thread, never from a task.
func runAsync(_ work: @escaping @Sendable () async throws -> Void) throws {
    // Safe to share: `error` is written by the task before it signals `done` and read only after `done.wait()` returns;
    // the semaphore orders the two.
    final class Outcome: @unchecked Sendable { var error: Error? }  // written by the task before `done`, read after
    let outcome = Outcome()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do { try await work() } catch { outcome.error = error }
        done.signal()
    }
    done.wait()
    if let error = outcome.error { throw error }
}
