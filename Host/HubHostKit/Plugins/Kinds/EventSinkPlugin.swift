import Foundation
import HubHostABI

/// One event as a sink gets it (hh_sink_event_t): the collector format's JSON object and the
/// fields a sink keys, routes or deduplicates by.
public struct SinkEvent: Equatable, Sendable {
    public var idempotencyKey: String
    public var typeCode: Int32
    public var timeMs: Int64
    /// One element of the collector format's "events" array, UTF-8.
    public var json: Data
    public var mobileUserID: String
    public var anonymousID: String

    public init(idempotencyKey: String, typeCode: Int32, timeMs: Int64, json: Data, mobileUserID: String = "", anonymousID: String = "") {
        self.idempotencyKey = idempotencyKey
        self.typeCode = typeCode
        self.timeMs = timeMs
        self.json = json
        self.mobileUserID = mobileUserID
        self.anonymousID = anonymousID
    }
}

/// A sink's answer for one event (HH_SINK_*).
public enum SinkOutcome: Equatable, Sendable {
    case delivered
    case retry(reason: String)
    case rejected(reason: String)
}

/// What one deliver call came to: the plugin's status and, on HH_OK, one outcome per event.
public struct SinkAnswer: Equatable, Sendable {
    public var status: Int32
    public var message: String
    /// One per event, in the batch's order (all `.retry` when status is not HH_OK).
    public var outcomes: [SinkOutcome]
    /// Outcome codes the ABI does not define, as the plugin wrote them (each counted as a retry).
    public var undefinedOutcomes: [Int32]

    public init(status: Int32, message: String, outcomes: [SinkOutcome], undefinedOutcomes: [Int32] = []) {
        self.status = status
        self.message = message
        self.outcomes = outcomes
        self.undefinedOutcomes = undefinedOutcomes
    }

    /// The whole batch failed before any event was judged: every event is a retry with `message`.
    static func failed(_ status: Int32, _ message: String, count: Int) -> SinkAnswer {
        SinkAnswer(status: status, message: message, outcomes: Array(repeating: .retry(reason: message), count: count))
    }
}

/// An `event_sink` plugin (hubhost_event_sink.h): delivers batches of events and answers per event.
/// Sendable: `handle` and `lock` are `let`s; every in-process `deliver` call (with the copy of its answers) runs
/// under `lock`, as the header's [host-serialized] asks.
public final class EventSinkPlugin: Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle
    private let lock = NSLock()  // deliver is [host-serialized]; an NSLock, not a Mutex: it guards the C call, no state
    /// The most events the header lets one call carry.
    public static let maxBatch = Int(HH_SINK_MAX_BATCH)
    /// A reason longer than this is cut: the plugin's length is a number from outside.
    static let maxReasonBytes = 4096

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .eventSink, "EventSinkPlugin needs an event_sink plugin")
        self.handle = handle
    }

    /// Delivers `events` (at most `maxBatch`) and copies the plugin's answers at once.
    public func deliver(_ events: [SinkEvent], timeoutMs: UInt32) -> SinkAnswer {
        deliver(SinkBatch(events), timeoutMs: timeoutMs)
    }

    /// The same for a batch laid out as one SinkBatch: the plugin's views point into its blocks.
    public func deliver(_ batch: SinkBatch, timeoutMs: UInt32) -> SinkAnswer {
        guard !batch.isEmpty else { return SinkAnswer(status: HH_OK, message: "", outcomes: []) }
        precondition(batch.count <= Self.maxBatch, "a sink batch holds at most \(Self.maxBatch) events")
        guard handle.instance != nil else {
            return IsolatedCalls.deliver(handle, batch.events, traceparents: batch.traceparents, timeoutMs: timeoutMs)
        }
        let raw = deliverRaw(batch, timeoutMs: timeoutMs)
        guard raw.status == HH_OK else {
            return .failed(raw.status, raw.message.isEmpty ? "the sink failed (\(StatusCode.name(raw.status)))" : raw.message, count: batch.count)
        }
        return Self.outcomes(raw.answers)
    }

    /// The in-process call: the plugin's status, message and answers (outcome code, reason) as written.
    func deliverRaw(_ events: [SinkEvent], timeoutMs: UInt32) -> (status: Int32, message: String, answers: [(Int32, String)]) {
        deliverRaw(SinkBatch(events), timeoutMs: timeoutMs)
    }

    /// The same for a laid-out batch. Every string of the batch is in its two host-owned blocks,
    /// valid for the call: a Data per string and a block copied per call were most of the sink
    /// thread's time in `bench sinks`.
    func deliverRaw(_ batch: SinkBatch, timeoutMs: UInt32) -> (status: Int32, message: String, answers: [(Int32, String)]) {
        guard let instance = handle.instance else { preconditionFailure("deliverRaw runs where the plugin is loaded") }
        let api = instance.api(hh_event_sink_v1_t.self)
        let count = batch.count
        var answers = [hh_sink_answer_t](
            repeating: hh_sink_answer_t(outcome: HH_SINK_RETRY, reason: hh_string_t(data: nil, length: 0)), count: count)
        let (status, message, copied): (Int32, String, [(Int32, String)]) = batch.body.withUnsafeBytes { body in
            batch.fields.withUnsafeBytes { fields in
                func string(_ block: UnsafeRawBufferPointer, _ range: Range<Int>) -> hh_string_t {
                    let base = block.baseAddress?.assumingMemoryBound(to: CChar.self)
                    return hh_string_t(data: range.isEmpty ? nil : base.map { $0 + range.lowerBound }, length: range.count)
                }
                let views = batch.entries.map { entry in
                    hh_sink_event_t(
                        idempotency_key: string(fields, entry.idempotencyKey), type_code: entry.typeCode, time_ms: entry.timeMs,
                        json: string(body, entry.json), mobile_user_id: string(fields, entry.mobileUserID),
                        anonymous_id: string(fields, entry.anonymousID))
                }
                return lock.withLock {
                    // Each event's traceparent is the plugin's to read during the call ("hubhost.event_trace.v1").
                    let status = instance.services.withDeliveryTraceparents(batch.traceparents) {
                        views.withUnsafeBufferPointer { viewBuffer in
                            answers.withUnsafeMutableBufferPointer { answerBuffer in
                                api.pointee.deliver(instance.handle, viewBuffer.baseAddress, count, answerBuffer.baseAddress, max(1, timeoutMs))
                            }
                        }
                    }
                    // The reasons are the plugin's until its next deliver: copy them inside the lock.
                    let copied = answers.map { answer -> (Int32, String) in
                        var reason = answer.reason
                        reason.length = min(reason.length, Self.maxReasonBytes)
                        return (answer.outcome, reason.data == nil ? "" : lossyUTF8(reason))
                    }
                    return (status, status == HH_OK ? "" : instance.takeError(), copied)
                }
            }
        }
        return (status, message, copied)
    }

    /// Turns raw (outcome, reason) pairs into outcomes; an undefined code is a retry, and noted.
    static func outcomes(_ raw: [(Int32, String)]) -> SinkAnswer {
        var undefined: [Int32] = []
        let outcomes = raw.map { code, reason -> SinkOutcome in
            switch code {
            case HH_SINK_DELIVERED: return .delivered
            case HH_SINK_REJECTED: return .rejected(reason: reason.isEmpty ? "rejected by the sink" : reason)
            case HH_SINK_RETRY: return .retry(reason: reason.isEmpty ? "the sink asked to retry later" : reason)
            default:
                undefined.append(code)
                return .retry(reason: "the sink answered outcome \(code), which the ABI does not define (see hh_sink_outcome_t)")
            }
        }
        return SinkAnswer(status: HH_OK, message: "", outcomes: outcomes, undefinedOutcomes: undefined)
    }
}
