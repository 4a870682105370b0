import NIOPosix
import Tracing

/// Where hubhost's blocking work runs when async code needs it: SQLite commits and their fsync,
/// plugin calls, file I/O and synchronous HTTP. Swift concurrency's cooperative threads (one per
/// core: two on a small machine) and the server's event loops must never wait on such work, or
/// every request stalls behind one slow commit. A thread pool of its own, sized for work that
/// mostly waits; callers suspend until their work is done.
public enum BlockingPool {
    /// Threads in the pool: enough that concurrent requests' commits, augmentations and a long
    /// content sync can wait at the same time.
    public static let threadCount = 16

    private static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: threadCount)
        pool.start()
        return pool
    }()

    /// Runs `work` on the pool and returns its result (or rethrows its error).
    /// With tracing on, the caller's span stays the current one in `work` (its plugin calls are its children).
    public static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        if HubTracing.isEnabled, let context = InstrumentationContext.current {
            return try await pool.runIfActive { try InstrumentationContext.withValue(context, operation: work) }
        }
        return try await pool.runIfActive(work)
    }
}
