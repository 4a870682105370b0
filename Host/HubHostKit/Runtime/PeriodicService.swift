import Foundation
import ServiceLifecycle

/// A runtime service that does one round of blocking work every `interval`, and at once when
/// woken (`wake`), until the service group shuts down gracefully; then its `final` round runs.
/// Rounds never overlap, and every round runs on the BlockingPool, never on a concurrency thread.
/// The engines' background work (event delivery, campaign pings, announcements, content syncs)
/// are instances of it, so an embedding app runs the same loops `hubhost serve` runs.
/// Safe to share: immutable after init; every field is a `let` (Sendable closures, an AsyncStream and its
/// continuation).
public final class PeriodicService: Service, @unchecked Sendable {
    /// The service's name, passed to `onError` with each failed round's error.
    public let name: String
    let interval: Double
    private let round: @Sendable () throws -> Void
    private let first: (@Sendable () throws -> Void)?
    private let final: (@Sendable () throws -> Void)?
    private let onError: @Sendable (String, Error) -> Void
    private let signal: AsyncStream<Void>.Continuation
    private let signals: AsyncStream<Void>

    /// - Parameters:
    ///   - first: runs once before the first round (e.g. a content download at start-up).
    ///   - final: runs once after graceful shutdown (e.g. the last flush).
    ///   - onError: hears a round's error; the service goes on with the next round.
    public init(
        name: String, every interval: Double, first: (@Sendable () throws -> Void)? = nil,
        final: (@Sendable () throws -> Void)? = nil, onError: @escaping @Sendable (String, Error) -> Void,
        round: @escaping @Sendable () throws -> Void
    ) {
        self.name = name
        self.interval = min(max(interval, 0.01), SafeTime.maxDurationSeconds)
        self.first = first
        self.final = final
        self.onError = onError
        self.round = round
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a round now (coalesced with one already asked for). Returns at once; any thread.
    public func wake() { signal.yield() }

    /// Runs `first`, then rounds until graceful shutdown, then `final`. The ServiceGroup calls it;
    /// it does not throw a round's error (`onError` hears it).
    public func run() async throws {
        if let first { await attempt(first) }
        let interval = self.interval
        let signal = self.signal
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: SafeTime.durationNs(interval))
                signal.yield()
            }
        }
        for await _ in signals.cancelOnGracefulShutdown() {
            await attempt(round)
        }
        ticker.cancel()
        // In a task of its own: the last round must run even when the group was cancelled
        // rather than shut down gracefully (the pool refuses work from a cancelled task).
        if let final { await Task { await attempt(final) }.value }
    }

    private func attempt(_ work: @escaping @Sendable () throws -> Void) async {
        do { try await BlockingPool.run(work) } catch { onError(name, error) }
    }
}
