import Foundation
import HubHostABI

/// A file download request as the prefetch engine would send it, before and after a
/// `download_request` plugin converts it (the PCD SDK's convertDownloadRequest).
public struct DownloadRequest: Sendable, Equatable {
    /// The file's URL; a plugin may rewrite it (a signed CDN URL, a mirror) to another absolute http or https URL.
    public var url: String
    /// The request's headers by name (a plugin's edits match names without regard to case); a plugin may add, replace or remove them.
    public var headers: [String: String]
    /// The content item's uniqueId; a plugin cannot change it.
    public var itemId: String
    /// Which file of the item ("main", "hls_main_index", "thumbnail", "subtitle"); a plugin cannot change it.
    public var fileRole: String

    /// A request for file `fileRole` of item `itemId` at `url`, with `headers` (default none).
    public init(url: String, headers: [String: String] = [:], itemId: String, fileRole: String) {
        self.url = url
        self.headers = headers
        self.itemId = itemId
        self.fileRole = fileRole
    }
}

/// A loaded `download_request` plugin (hubhost_download_request.h), in process or isolated.
/// Sendable: its only field is the `let` handle, and `convert` is [thread-safe] in hubhost_download_request.h.
public final class DownloadRequestPlugin: Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .downloadRequest, "DownloadRequestPlugin needs a download_request plugin")
        self.handle = handle
    }

    /// The request after the plugin's edits (unchanged when the plugin answers HH_ERR_NOT_FOUND or
    /// makes none). Throws `PluginCallError.failed` when the plugin fails, `.invalidAnswer` when
    /// its result breaks the header's limits (`DownloadRequestLimits`). May block briefly: call it
    /// through `BlockingPool.run` from async code. [thread-safe]
    /// A plugin ejected after failing calls in a row throws `.failed` (HH_ERR_UNAVAILABLE) at once.
    public func convert(_ request: DownloadRequest) throws -> DownloadRequest {
        guard let converted = try handle.unlessEjected({ try convertInAnyRuntime(request) }, verdict: { _ in .answered }) else {
            throw PluginCallError.failed(instance: handle.instanceID, status: HH_ERR_UNAVAILABLE, message: handle.ejectedMessage)
        }
        return converted
    }

    private func convertInAnyRuntime(_ request: DownloadRequest) throws -> DownloadRequest {
        guard handle.instance != nil else { return try IsolatedCalls.convertDownloadRequest(handle, request) }
        let answer = handle.withDeadline(PluginHandle.requestCallDeadlineSeconds) { [self] in
            Result { try convertInProcess(request) }.mapError {
                $0 as? PluginCallError ?? .failed(instance: "", status: HH_ERR_INTERNAL, message: "\($0)")
            }
        }
        guard let answer else {
            throw PluginCallError.failed(instance: handle.instanceID, status: HH_ERR_TIMEOUT, message: PluginHandle.overranMessage)
        }
        return try answer.get()
    }

    private func convertInProcess(_ request: DownloadRequest) throws -> DownloadRequest {
        guard let instance = handle.instance else { return try IsolatedCalls.convertDownloadRequest(handle, request) }
        let api = instance.api(hh_download_request_v1_t.self)
        guard let convert = api.pointee.convert else {
            throw PluginCallError.failed(instance: handle.instanceID, status: HH_ERR_UNSUPPORTED, message: "the plugin has no convert")
        }
        let session = DownloadRequestEditSession(request)
        defer { session.release() }
        let status = session.withRequest { request, editor in convert(instance.handle, request, editor) }
        switch status {
        case HH_OK: break
        case HH_ERR_NOT_FOUND: return request
        default: throw PluginCallError.failed(instance: handle.instanceID, status: status, message: instance.takeError())
        }
        do {
            return try session.result()
        } catch {
            throw PluginCallError.invalidAnswer(instance: handle.instanceID, reason: error.reason)
        }
    }
}

// MARK: Over the wire

extension IsolatedCalls {
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

    // The worker side: tag 0 and the request, or tag 1 and the error (see `valueCall`).
    static let downloadRequestServers: [WorkerOp: Server] = [
        .convertDownloadRequest: { handle, request, out in
            do {
                let converted = try DownloadRequestPlugin(handle).convert(try request.downloadRequest())
                out.u8(0)
                out.downloadRequest(converted)
            } catch let error as PluginCallError {
                out.u8(1)
                out.callError(error)
            }
        }
    ]
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
}
