import Foundation
import ServiceLifecycle
import Synchronization

/// A runtime service that does one round of blocking work every `interval`, and at once when
/// woken (`wake`), until the service group shuts down gracefully; then its `final` round runs.
/// Rounds never overlap, and every round runs on the BlockingPool, never on a concurrency thread.
/// The engines' background work (event delivery, campaign pings, announcements, content syncs)
/// are instances of it, so an embedding app runs the same loops `hubhost serve` runs.
public final class PeriodicService: Service, Sendable {
    /// The service's name, passed to `onError` with each failed round's error.
    public let name: String
    /// The interval between rounds (a reload may change it: `setInterval`) and the task that
    /// signals each round while the service runs.
    private let ticking: Mutex<(interval: Double, ticker: Task<Void, Never>?)>
    /// The interval between rounds, in seconds.
    public var interval: Double { ticking.withLock { $0.interval } }
    private let round: @Sendable () throws -> Void
    private let first: (@Sendable () throws -> Void)?
    private let final: (@Sendable () throws -> Void)?
    private let onError: @Sendable (String, Error) -> Void
    private let signal: AsyncStream<Void>.Continuation
    private let signals: AsyncStream<Void>

    /// - Parameters:
    ///   - name: the service's name, passed to `onError` with each failed round's error.
    ///   - interval: seconds between rounds, clamped to at least 0.01; the first round comes one interval
    ///     after `first` has run, or sooner when woken.
    ///   - first: runs once before the first round (e.g. a content download at start-up).
    ///   - final: runs once after graceful shutdown (e.g. the last flush).
    ///   - onError: hears a round's error; the service goes on with the next round.
    ///   - round: one round of blocking work, run on the BlockingPool; rounds never overlap.
    public init(
        name: String, every interval: Double, first: (@Sendable () throws -> Void)? = nil,
        final: (@Sendable () throws -> Void)? = nil, onError: @escaping @Sendable (String, Error) -> Void,
        round: @escaping @Sendable () throws -> Void
    ) {
        self.name = name
        ticking = Mutex((Self.clamped(interval), nil))
        self.first = first
        self.final = final
        self.onError = onError
        self.round = round
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a round now (coalesced with one already asked for). Returns at once; any thread.
    public func wake() { signal.yield() }

    /// Rounds come every `seconds` from now on (a reload changed the setting behind it); the wait
    /// in progress is cut short, so a shorter interval takes effect at once. Any thread.
    public func setInterval(_ seconds: Double) {
        ticking.withLock { state in
            state.interval = Self.clamped(seconds)
            if let running = state.ticker {
                running.cancel()
                state.ticker = ticker(every: state.interval)
            }
        }
    }

    private static func clamped(_ seconds: Double) -> Double { min(max(seconds, 0.01), SafeTime.maxDurationSeconds) }

    private func ticker(every interval: Double) -> Task<Void, Never> {
        let signal = self.signal
        return Task {
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: SafeTime.durationNs(interval))
                if Task.isCancelled { break }
                signal.yield()
            }
        }
    }

    /// Runs `first`, then rounds until graceful shutdown, then `final`. The ServiceGroup calls it;
    /// it does not throw a round's error (`onError` hears it).
    public func run() async throws {
        if let first { await attempt(first) }
        ticking.withLock { $0.ticker = ticker(every: $0.interval) }
        for await _ in signals.cancelOnGracefulShutdown() {
            await attempt(round)
        }
        ticking.withLock { state in
            state.ticker?.cancel()
            state.ticker = nil
        }
        // In a task of its own: the last round must run even when the group was cancelled
        // rather than shut down gracefully (the pool refuses work from a cancelled task).
        if let final { await Task { await attempt(final) }.value }
    }

    private func attempt(_ work: @escaping @Sendable () throws -> Void) async {
        do { try await BlockingPool.run(work) } catch { onError(name, error) }
    }
}
