import Foundation
import HubHostABI

/// The calls an isolated plugin answers, one code each on the wire. The codes are written once, as
/// the HH_WIRE_OP_* constants of Protocols/include/hubhost/hubhost_wire_ops.h (internal, not part
/// of the plugin ABI), which the WebAssembly guest adapter (Protocols/wasm/hubhost_wasm_guest.c)
/// reads too: a new call gets its constant there, then its case and its line in `rawValue` here,
/// and its server in its kind's table (see `IsolatedCalls.serversByKind`).
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
///
/// Each kind writes both halves of its calls, and the wire helpers of its own types, in an
/// `extension IsolatedCalls` at the end of its adapter's file in Plugins/Kinds/ (a kind is read in
/// one place); its worker side is a `[WorkerOp: Server]` listed once in `serversByKind` here. This
/// file keeps what every kind shares: the channel of a handle, the status of a failed call,
/// `valueCall`, and the worker's dispatch.
package enum IsolatedCalls {
    /// The worker side of one call: decodes the request for an in-process handle, calls the plugin
    /// through its adapter, and encodes the answer. Throws for a request that does not decode.
    typealias Server = @Sendable (PluginHandle, inout WireReader, inout WireWriter) throws -> Void

    // MARK: Host side (shared)

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

    // MARK: Worker side

    /// Every kind's servers, by kind: each table is written beside the kind's adapter (e.g.
    /// `augmentationServers` at the end of AugmentationPlugin.swift). A new kind adds its line here.
    static let serversByKind: [PluginKind: [WorkerOp: Server]] = [
        .augmentation: augmentationServers,
        .triggerOperator: triggerOperatorServers,
        .logging: loggingServers,
        .advertiserID: advertiserIDServers,
        .location: locationServers,
        .contentProvider: contentProviderServers,
        .userIDGenerator: userIDGeneratorServers,
        .deviceConditions: deviceConditionsServers,
        .downloadRequest: downloadRequestServers,
        .eventSink: eventSinkServers
    ]

    /// The calls each kind answers, in code order (what the tests check covers every kind and op).
    static let ops: [PluginKind: [WorkerOp]] = serversByKind.mapValues { $0.keys.sorted { $0.rawValue < $1.rawValue } }

    /// The worker's dispatch: every op's server, merged from the kinds' tables. An op listed by two
    /// kinds keeps one server; the tests refuse such a table, so it never ships.
    static let servers: [WorkerOp: Server] = serversByKind.values.reduce(into: [:]) { table, kind in
        table.merge(kind) { first, _ in first }
    }

    /// Answers one request for an in-process handle, in the worker, through the op's server.
    static func serve(_ op: WorkerOp, _ handle: PluginHandle, _ request: inout WireReader, into out: inout WireWriter) throws {
        // Every op has a server (the tests check it); one without would be a bad request, which
        // the worker answers as it answers any request that does not decode.
        guard let server = servers[op] else { throw WireError(description: "no server for call \(op.rawValue)") }
        try server(handle, &request, &out)
    }
}

extension WireWriter {
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
    mutating func callError(_ handle: PluginHandle) throws -> PluginCallError {
        switch try u8() {
        case 0: return .failed(instance: handle.instanceID, status: try i32(), message: try string())
        default: return .invalidAnswer(instance: handle.instanceID, reason: try string())
        }
    }
}
