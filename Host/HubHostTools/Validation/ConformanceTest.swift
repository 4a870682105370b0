/// One conformance test of `hubhost plugins test`: a name that `--filter` matches, what it checks,
/// and the check itself, which throws ConformanceFailure (or anything) to fail.
public struct ConformanceTest: Sendable {
    /// `library/<check>` or `<plugin-id>/<check>`.
    public var name: String
    public var summary: String
    let body: @Sendable (ConformanceContext) throws -> Void

    init(_ name: String, _ summary: String, _ body: @escaping @Sendable (ConformanceContext) throws -> Void) {
        self.name = name
        self.summary = summary
        self.body = body
    }
}

/// Why a conformance test failed, in words an author can act on.
public struct ConformanceFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The result of one conformance test.
public struct ConformanceResult: Codable, Equatable, Sendable {
    public enum Outcome: String, Codable, Sendable { case passed, failed }
    public var name: String
    public var outcome: Outcome
    public var message: String
    public var durationMs: Double
    /// The signal that ended the test's process (crash), when one did.
    public var signal: Int32?
    public var timedOut: Bool

    public init(name: String, outcome: Outcome, message: String, durationMs: Double, signal: Int32? = nil, timedOut: Bool = false) {
        self.name = name
        self.outcome = outcome
        self.message = message
        self.durationMs = durationMs
        self.signal = signal
        self.timedOut = timedOut
    }
}
