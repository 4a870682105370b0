import Foundation
import HubHostABI

/// One event as a sink gets it (hh_sink_event_t): the collector format's JSON object and the
/// fields a sink keys, routes or deduplicates by.
package struct SinkEvent: Equatable, Sendable {
    package var idempotencyKey: String
    package var typeCode: Int32
    package var timeMs: Int64
    /// One element of the collector format's "events" array, UTF-8.
    package var json: Data
    package var mobileUserID: String
    package var anonymousID: String

    package init(idempotencyKey: String, typeCode: Int32, timeMs: Int64, json: Data, mobileUserID: String = "", anonymousID: String = "") {
        self.idempotencyKey = idempotencyKey
        self.typeCode = typeCode
        self.timeMs = timeMs
        self.json = json
        self.mobileUserID = mobileUserID
        self.anonymousID = anonymousID
    }
}

/// A sink's answer for one event (HH_SINK_*).
package enum SinkOutcome: Equatable, Sendable {
    case delivered
    case retry(reason: String)
    case rejected(reason: String)
}

/// What one deliver call came to: the plugin's status and, on HH_OK, one outcome per event.
package struct SinkAnswer: Equatable, Sendable {
    package var status: Int32
    package var message: String
    /// One per event, in the batch's order (all `.retry` when status is not HH_OK).
    package var outcomes: [SinkOutcome]
    /// Outcome codes the ABI does not define, as the plugin wrote them (each counted as a retry).
    package var undefinedOutcomes: [Int32]

    package init(status: Int32, message: String, outcomes: [SinkOutcome], undefinedOutcomes: [Int32] = []) {
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
package final class EventSinkPlugin: Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    package let handle: PluginHandle
    private let lock = NSLock()  // deliver is [host-serialized]; an NSLock, not a Mutex: it guards the C call, no state
    /// The most events the header lets one call carry.
    package static let maxBatch = Int(HH_SINK_MAX_BATCH)
    /// A reason longer than this is cut: the plugin's length is a number from outside.
    static let maxReasonBytes = 4096

    /// Wraps an instance created in this process; the caller checks its kind first.
    package convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    package init(_ handle: PluginHandle) {
        precondition(handle.kind == .eventSink, "EventSinkPlugin needs an event_sink plugin")
        self.handle = handle
    }

    /// Delivers `events` (at most `maxBatch`) and copies the plugin's answers at once.
    package func deliver(_ events: [SinkEvent], timeoutMs: UInt32) -> SinkAnswer {
        deliver(SinkBatch(events), timeoutMs: timeoutMs)
    }

    /// The same for a batch laid out as one SinkBatch: the plugin's views point into its blocks.
    package func deliver(_ batch: SinkBatch, timeoutMs: UInt32) -> SinkAnswer {
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

// MARK: Over the wire

extension IsolatedCalls {
    /// A sink batch in the worker: a crash or a hang there is a failed call, so every event of the
    /// batch is a retry (the store keeps them) and the worker is restarted by the next call.
    /// The events' traceparents follow the events (a count, then index and traceparent each),
    /// for the plugin's `hubhost.event_trace.v1` in the worker; a reader that stops after the
    /// events (the Wasm guest adapter) is not disturbed by them.
    static func deliver(_ handle: PluginHandle, _ events: [SinkEvent], traceparents: [Int: String] = [:], timeoutMs: UInt32) -> SinkAnswer {
        let (worker, index) = worker(handle)
        let result = worker.call(index, .deliver) { out in
            out.u32(timeoutMs)
            out.u32(UInt32(events.count))
            for event in events { out.sinkEvent(event) }
            out.u32(UInt32(traceparents.count))
            for (index, traceparent) in traceparents.sorted(by: { $0.key < $1.key }) {
                out.u32(UInt32(index))
                out.string(traceparent)
            }
        }
        switch result {
        case .success(var reader):
            do {
                let status = try reader.i32()
                let message = try reader.string()
                guard status == HH_OK else { return .failed(status, message, count: events.count) }
                let count = Int(try reader.u32())
                guard count == events.count else {
                    return .failed(HH_ERR_INTERNAL, "the worker answered \(count) outcomes for \(events.count) events", count: events.count)
                }
                var raw: [(Int32, String)] = []
                for _ in 0..<count { raw.append((try reader.i32(), try reader.string())) }
                return EventSinkPlugin.outcomes(raw)
            } catch {
                return .failed(HH_ERR_INTERNAL, "bad answer from the worker: \(error)", count: events.count)
            }
        case .failure(let failure):
            // A worker that crashed or hung may have sent part of the batch: a retry, never a wait.
            return .failed(HH_ERR_INTERNAL, failure.description, count: events.count)
        }
    }

    // The worker side.
    static let eventSinkServers: [WorkerOp: Server] = [
        .deliver: { handle, request, out in
            let timeoutMs = try request.u32()
            let count = Int(try request.u32())
            guard (1...EventSinkPlugin.maxBatch).contains(count) else { throw WireError(description: "a sink batch of \(count) events") }
            var batch = SinkBatch()
            for _ in 0..<count { batch.append(try request.sinkEvent()) }
            let traced = request.isAtEnd ? 0 : Int(try request.u32())
            guard traced <= count else { throw WireError(description: "\(traced) traceparents for \(count) events") }
            for _ in 0..<traced {
                let index = Int(try request.u32())
                guard let traceparent = HubTracing.validTraceparent(try request.string()) else { continue }
                batch.setTraceparent(traceparent, at: index)
            }
            // The raw codes travel as the plugin wrote them: the host judges them, as in process.
            let raw = EventSinkPlugin(handle).deliverRaw(batch, timeoutMs: timeoutMs)
            out.i32(raw.status)
            out.string(raw.message)
            guard raw.status == HH_OK else { return }
            out.u32(UInt32(raw.answers.count))
            for (code, reason) in raw.answers {
                out.i32(code)
                out.string(reason)
            }
        }
    ]
}

extension WireWriter {
    mutating func sinkEvent(_ e: SinkEvent) {
        string(e.idempotencyKey)
        i32(e.typeCode)
        i64(e.timeMs)
        data(e.json)
        string(e.mobileUserID)
        string(e.anonymousID)
    }
}

extension WireReader {
    mutating func sinkEvent() throws -> SinkEvent {
        SinkEvent(
            idempotencyKey: try string(), typeCode: try i32(), timeMs: try i64(), json: try data(), mobileUserID: try string(),
            anonymousID: try string())
    }
}
