import Foundation
import HubHostABI

/// The calls an isolated plugin answers, one code each on the wire. The codes are written once, as
/// the HH_WIRE_OP_* constants of Protocols/include/hubhost/hubhost_wire_ops.h (internal, not part
/// of the plugin ABI), which the WebAssembly guest adapter (Protocols/wasm/hubhost_wasm_guest.c)
/// reads too: a new call gets its constant there, then its case and its line in `rawValue` here.
enum WorkerOp: RawRepresentable, CaseIterable {
    case augment, processSynchronously, isSupplementalDataReady
    case operatorInfo, compare
    case log, flush
    case advertiserID, location, fetch
    case userID
    case deviceConditions, convertDownloadRequest
    case deliver  // ABI 1.1: event_sink

    /// The call's code on the wire.
    var rawValue: UInt8 {
        switch self {
        case .augment: UInt8(HH_WIRE_OP_AUGMENT)
        case .processSynchronously: UInt8(HH_WIRE_OP_PROCESS_SYNCHRONOUSLY)
        case .isSupplementalDataReady: UInt8(HH_WIRE_OP_IS_SUPPLEMENTAL_DATA_READY)
        case .operatorInfo: UInt8(HH_WIRE_OP_OPERATOR_INFO)
        case .compare: UInt8(HH_WIRE_OP_COMPARE)
        case .log: UInt8(HH_WIRE_OP_LOG)
        case .flush: UInt8(HH_WIRE_OP_FLUSH)
        case .advertiserID: UInt8(HH_WIRE_OP_ADVERTISER_ID)
        case .location: UInt8(HH_WIRE_OP_LOCATION)
        case .fetch: UInt8(HH_WIRE_OP_FETCH)
        case .userID: UInt8(HH_WIRE_OP_USER_ID)
        case .deviceConditions: UInt8(HH_WIRE_OP_DEVICE_CONDITIONS)
        case .convertDownloadRequest: UInt8(HH_WIRE_OP_CONVERT_DOWNLOAD_REQUEST)
        case .deliver: UInt8(HH_WIRE_OP_DELIVER)
        }
    }

    /// The call a code names; nil for a code of no call.
    init?(rawValue: UInt8) {
        guard let op = Self.byCode[rawValue] else { return nil }
        self = op
    }

    private static let byCode = Dictionary(uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })
}

/// Both halves of every isolated call: the host encodes a request and decodes the answer (or turns a
/// worker failure into that kind's failure); the worker decodes the request, calls the plugin in its
/// own process through the same adapters, and encodes the answer.
package enum IsolatedCalls {
    // MARK: Host side

    static func worker(_ handle: PluginHandle) -> (any PluginCallChannel, Int) {
        switch handle.backend {
        case .isolated(let worker, let index): return (worker, index)
        case .wasm(let guest, let index): return (guest, index)
        case .inProcess: preconditionFailure("not an isolated plugin")
        }
    }

    /// The status a failed call answers: a timeout for a call past its budget, else unavailable.
    static func status(of failure: WorkerFailure) -> Int32 {
        if case .timedOut = failure { return HH_ERR_TIMEOUT }
        return HH_ERR_UNAVAILABLE
    }

    static func augment(_ handle: PluginHandle, _ event: AugmentableEvent) -> AugmentationOutcome {
        let (worker, index) = worker(handle)
        switch worker.call(index, .augment, { $0.event(event) }) {
        case .success(var reader):
            do {
                let status = try reader.i32()
                let message = try reader.string()
                var result = event
                if status == HH_OK {
                    // A worker sends the event back, edited in its process by the in-process editor;
                    // a WebAssembly guest only its plugin's edits, replayed through that editor here.
                    if case .wasm = handle.backend {
                        let session = EventEditSession(event)
                        defer { session.release() }
                        try session.replayWasmGuestEdits(from: &reader)
                        result = session.working
                    } else {
                        result = try reader.event()
                    }
                }
                return AugmentationOutcome(status: status, message: message, event: result)
            } catch {
                return AugmentationOutcome(status: HH_ERR_INTERNAL, message: "bad answer from the worker: \(error)", event: event)
            }
        case .failure(let failure):
            return AugmentationOutcome(status: status(of: failure), message: failure.description, event: event)
        }
    }

    /// An augment call whose event id, name, and one attribute's name and string value are `bytes`
    /// exactly, UTF-8 or not (which no Swift String can carry): the status the plugin answered, for
    /// the conformance suite's non-UTF-8 test on a plugin that is not in process.
    package static func augmentStatus(_ handle: PluginHandle, rawStrings bytes: [UInt8]) -> Int32 {
        let (worker, index) = worker(handle)
        let raw = { (out: inout WireWriter) in
            out.u32(UInt32(bytes.count))
            out.raw(bytes)
        }
        let result = worker.call(index, .augment) { out in
            raw(&out)
            out.i32(17)
            raw(&out)
            out.i64(0)
            out.u32(1)
            raw(&out)
            out.u8(1)  // a string value
            raw(&out)
        }
        switch result {
        case .success(var reader): return (try? reader.i32()) ?? HH_ERR_INTERNAL
        case .failure(let failure): return status(of: failure)
        }
    }

    static func flag(_ handle: PluginHandle, _ op: WorkerOp) -> Bool {
        let (worker, index) = worker(handle)
        guard case .success(var reader) = worker.call(index, op, { _ in }) else { return false }
        return (try? reader.bool()) ?? false
    }

    static func operatorInfo(_ handle: PluginHandle) -> (String, Int32) {
        let (worker, index) = worker(handle)
        guard case .success(var reader) = worker.call(index, .operatorInfo, { _ in }),
            let name = try? reader.string(), let code = try? reader.i32()
        else { return (handle.pluginID, 0) }
        return (name, code)
    }

    static func compare(_ handle: PluginHandle, _ event: PluginValue, _ trigger: PluginValue) -> (result: Bool, status: Int32, reason: String) {
        let (worker, index) = worker(handle)
        switch worker.call(
            index, .compare,
            {
                $0.value(event)
                $0.value(trigger)
            })
        {
        case .success(var reader):
            guard let result = try? reader.bool(), let status = try? reader.i32(), let reason = try? reader.string() else {
                return (false, HH_ERR_INTERNAL, "bad answer from the worker")
            }
            return (result, status, reason)
        case .failure(let failure):
            return (false, status(of: failure), failure.description)
        }
    }

    static func advertiserID(_ handle: PluginHandle) -> AdvertiserIDAnswer {
        let (worker, index) = worker(handle)
        switch worker.call(index, .advertiserID, { _ in }) {
        case .success(var reader):
            do {
                switch try reader.u8() {
                case 0: return .id(try reader.string())
                case 1: return .limitAdTracking
                case 2: return AdvertiserIDAnswer.none
                case 3: return .noOpinion
                default: return .failed(status: try reader.i32(), message: try reader.string())
                }
            } catch {
                return .failed(status: HH_ERR_INTERNAL, message: "bad answer from the worker: \(error)")
            }
        case .failure(let failure):
            return .failed(status: HH_ERR_UNAVAILABLE, message: failure.description)
        }
    }

    static func location(_ handle: PluginHandle) -> LocationAnswer {
        let (worker, index) = worker(handle)
        switch worker.call(index, .location, { _ in }) {
        case .success(var reader):
            do {
                switch try reader.u8() {
                case 0:
                    return .location(
                        Location(
                            latitude: try reader.optionalDouble(), longitude: try reader.optionalDouble(),
                            accuracyMeters: try reader.optionalDouble(),
                            timeMs: try reader.bool() ? try reader.i64() : nil,
                            locationID: try reader.optionalString(), name: try reader.optionalString(),
                            address: try reader.optionalString()))
                case 1: return .unavailable
                default: return .failed(status: try reader.i32(), message: try reader.string())
                }
            } catch {
                return .failed(status: HH_ERR_INTERNAL, message: "bad answer from the worker: \(error)")
            }
        case .failure(let failure):
            return .failed(status: HH_ERR_UNAVAILABLE, message: failure.description)
        }
    }

    static func userID(_ handle: PluginHandle) -> UserIDGeneratorPlugin.Answer {
        let (worker, index) = worker(handle)
        switch worker.call(index, .userID, { _ in }) {
        case .success(var reader):
            do {
                switch try reader.u8() {
                case 0: return .id(try reader.string())
                default: return .failed(status: try reader.i32(), message: try reader.string())
                }
            } catch {
                return .failed(status: HH_ERR_INTERNAL, message: "bad answer from the worker: \(error)")
            }
        case .failure(let failure):
            return .failed(status: HH_ERR_UNAVAILABLE, message: failure.description)
        }
    }

    static func fetch(_ handle: PluginHandle, _ resource: String) -> ContentProviderPlugin.Fetched {
        let (worker, index) = worker(handle)
        switch worker.call(index, .fetch, { $0.string(resource) }) {
        case .success(var reader):
            guard let status = try? reader.i32(), let message = try? reader.string(), let data = try? reader.data() else {
                return .init(status: HH_ERR_INTERNAL, message: "bad answer from the worker", data: Data(), progress: nil)
            }
            return .init(status: status, message: message, data: data, progress: nil)
        case .failure(let failure):
            return .init(status: HH_ERR_IO, message: failure.description, data: Data(), progress: nil)
        }
    }

    /// One call whose answer is a value or a PluginCallError: tag 0 then what `decode` reads, or
    /// tag 1 then the error. A worker that fails is HH_ERR_UNAVAILABLE, an answer that does not
    /// decode HH_ERR_INTERNAL. `decode` checks the value again as if the plugin had answered in
    /// process (throwing `.invalidAnswer`), so a worker cannot hand over what the in-process path
    /// would refuse.
    static func valueCall<T>(
        _ handle: PluginHandle, _ op: WorkerOp, _ arguments: (inout WireWriter) -> Void,
        decode: (inout WireReader) throws -> T
    ) throws -> T {
        let (worker, index) = worker(handle)
        switch worker.call(index, op, arguments) {
        case .success(var reader):
            do {
                guard try reader.u8() == 0 else { throw try reader.callError(handle) }
                return try decode(&reader)
            } catch let error as PluginCallError {
                throw error
            } catch {
                throw PluginCallError.failed(instance: handle.instanceID, status: HH_ERR_INTERNAL, message: "bad answer from the worker: \(error)")
            }
        case .failure(let failure):
            throw PluginCallError.failed(instance: handle.instanceID, status: HH_ERR_UNAVAILABLE, message: failure.description)
        }
    }

    static func deviceConditions(_ handle: PluginHandle, dataDirectory: String) throws -> DeviceConditions {
        try valueCall(handle, .deviceConditions, { $0.string(dataDirectory) }) { reader in
            let network = try reader.i32()
            let metered = try reader.bool()
            let hasBattery = try reader.bool()
            let level = try reader.f64()
            let charging = try reader.i32()
            let hasFree = try reader.bool()
            let free = try reader.u64()
            do {
                return try DeviceConditions.checked(
                    network: network, metered: metered, hasBattery: hasBattery, batteryLevel: level,
                    charging: charging, hasFreeBytes: hasFree, freeBytes: free)
            } catch let problem as DeviceConditionsProblem {
                throw PluginCallError.invalidAnswer(instance: handle.instanceID, reason: problem.reason)
            }
        }
    }

    static func convertDownloadRequest(_ handle: PluginHandle, _ request: DownloadRequest) throws -> DownloadRequest {
        try valueCall(handle, .convertDownloadRequest, { $0.downloadRequest(request) }) { reader in
            var converted = try reader.downloadRequest()
            // The item and the role are the host's: whatever the worker says, they stay.
            converted.itemId = request.itemId
            converted.fileRole = request.fileRole
            do {
                try DownloadRequestLimits.check(converted)
            } catch let problem as DownloadRequestProblem {
                throw PluginCallError.invalidAnswer(instance: handle.instanceID, reason: problem.reason)
            }
            return converted
        }
    }

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

    // MARK: Worker side

    /// Answers one request for an in-process handle, in the worker. Long: one case per wire
    /// operation, each a few lines decoding the request and encoding the answer, beside the host
    /// side of the same operation above.
    static func serve(_ op: WorkerOp, _ handle: PluginHandle, _ request: inout WireReader, into out: inout WireWriter) throws {
        switch op {
        case .augment:
            let outcome = AugmentationPlugin(handle).augment(try request.event())
            out.i32(outcome.status)
            out.string(outcome.message)
            if outcome.status == HH_OK { out.event(outcome.event) }
        case .processSynchronously: out.bool(AugmentationPlugin(handle).processSynchronously)
        case .isSupplementalDataReady: out.bool(AugmentationPlugin(handle).isSupplementalDataReady)
        case .operatorInfo:
            let op = TriggerOperatorPlugin(handle)
            out.string(op.operatorName)
            out.i32(op.wireCode)
        case .compare:
            let event = try request.value()
            let trigger = try request.value()
            let answer = TriggerOperatorPlugin(handle).compare(event: event, trigger: trigger)
            out.bool(answer.result)
            out.i32(answer.status)
            out.string(answer.reason)
        case .log: LoggingPlugin(handle).write(try request.logRecord())
        case .flush: LoggingPlugin(handle).flush()
        case .advertiserID:
            switch AdvertiserIDPlugin(handle).answer() {
            case .id(let id):
                out.u8(0)
                out.string(id)
            case .limitAdTracking: out.u8(1)
            case .none: out.u8(2)
            case .noOpinion: out.u8(3)
            case .failed(let status, let message):
                out.u8(4)
                out.i32(status)
                out.string(message)
            }
        case .location:
            switch LocationPlugin(handle).current() {
            case .location(let l):
                out.u8(0)
                out.optionalDouble(l.latitude)
                out.optionalDouble(l.longitude)
                out.optionalDouble(l.accuracyMeters)
                out.bool(l.timeMs != nil)
                if let t = l.timeMs { out.i64(t) }
                out.optionalString(l.locationID)
                out.optionalString(l.name)
                out.optionalString(l.address)
            case .unavailable: out.u8(1)
            case .failed(let status, let message):
                out.u8(2)
                out.i32(status)
                out.string(message)
            }
        case .userID:
            switch UserIDGeneratorPlugin(handle).answer() {
            case .id(let id):
                out.u8(0)
                out.string(id)
            case .failed(let status, let message):
                out.u8(1)
                out.i32(status)
                out.string(message)
            }
        case .fetch:
            let fetched = ContentProviderPlugin(handle).fetch(try request.string())
            out.i32(fetched.status)
            out.string(fetched.message)
            out.data(fetched.data)
        case .deviceConditions:
            do {
                let c = try DeviceConditionsPlugin(handle).read(dataDirectory: try request.string())
                out.u8(0)
                out.i32(c.networkCode)
                out.bool(c.metered)
                out.bool(c.batteryLevel != nil)
                out.f64(c.batteryLevel ?? 0)
                out.i32(c.chargingCode)
                out.bool(c.freeBytes != nil)
                out.u64(c.freeBytes ?? 0)
            } catch let error as PluginCallError {
                out.u8(1)
                out.callError(error)
            }
        case .convertDownloadRequest:
            do {
                let converted = try DownloadRequestPlugin(handle).convert(try request.downloadRequest())
                out.u8(0)
                out.downloadRequest(converted)
            } catch let error as PluginCallError {
                out.u8(1)
                out.callError(error)
            }
        case .deliver:
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
    }
}

extension WireWriter {
    mutating func event(_ e: AugmentableEvent) {
        // Sized once: growing the buffer attribute by attribute was a tenth of a WebAssembly call.
        var size = 24 + e.id.utf8.count + e.name.utf8.count
        for attribute in e.attributes {
            size += 14 + attribute.name.utf8.count
            if case .string(let text) = attribute.value { size += text.utf8.count }
        }
        reserve(size)
        string(e.id)
        i32(e.typeCode)
        string(e.name)
        i64(e.timeMs)
        u32(UInt32(e.attributes.count))
        for attribute in e.attributes {
            string(attribute.name)
            value(attribute.value)
        }
    }

    mutating func sinkEvent(_ e: SinkEvent) {
        string(e.idempotencyKey)
        i32(e.typeCode)
        i64(e.timeMs)
        data(e.json)
        string(e.mobileUserID)
        string(e.anonymousID)
    }

    mutating func logRecord(_ r: LogRecord) {
        i32(r.severity.rawValue)
        i32(r.verbosity.rawValue)
        i64(r.timeMs)
        string(r.source)
        string(r.message)
    }
}

extension WireWriter {
    mutating func downloadRequest(_ r: DownloadRequest) {
        string(r.url)
        string(r.itemId)
        string(r.fileRole)
        u32(UInt32(r.headers.count))
        for (name, value) in r.headers.sorted(by: { $0.key < $1.key }) {
            string(name)
            string(value)
        }
    }

    /// A PluginCallError without its instance id (the host side knows it).
    mutating func callError(_ e: PluginCallError) {
        switch e {
        case .failed(_, let status, let message):
            u8(0)
            i32(status)
            string(message)
        case .invalidAnswer(_, let reason):
            u8(1)
            string(reason)
        }
    }
}

extension WireReader {
    mutating func downloadRequest() throws -> DownloadRequest {
        let url = try string()
        let itemId = try string()
        let fileRole = try string()
        let count = Int(try u32())
        guard count <= DownloadRequestLimits.maxHeaders else { throw WireError(description: "\(count) headers") }
        var headers: [String: String] = [:]
        for _ in 0..<count { headers[try string()] = try string() }
        return DownloadRequest(url: url, headers: headers, itemId: itemId, fileRole: fileRole)
    }

    mutating func callError(_ handle: PluginHandle) throws -> PluginCallError {
        switch try u8() {
        case 0: return .failed(instance: handle.instanceID, status: try i32(), message: try string())
        default: return .invalidAnswer(instance: handle.instanceID, reason: try string())
        }
    }

    mutating func event() throws -> AugmentableEvent {
        let id = try string()
        let typeCode = try i32()
        let name = try string()
        let timeMs = try i64()
        let count = Int(try u32())
        var attributes: [(name: String, value: PluginValue)] = []
        attributes.reserveCapacity(min(count, 4096))
        for _ in 0..<count { attributes.append((try string(), try value())) }
        return AugmentableEvent(id: id, typeCode: typeCode, name: name, timeMs: timeMs, attributes: attributes)
    }

    mutating func sinkEvent() throws -> SinkEvent {
        SinkEvent(
            idempotencyKey: try string(), typeCode: try i32(), timeMs: try i64(), json: try data(), mobileUserID: try string(),
            anonymousID: try string())
    }

    mutating func logRecord() throws -> LogRecord {
        guard let severity = LogSeverity(rawValue: try i32()), let verbosity = LogVerbosity(rawValue: try i32()) else {
            throw WireError(description: "bad log levels")
        }
        return LogRecord(severity: severity, verbosity: verbosity, timeMs: try i64(), source: try string(), message: try string())
    }
}
