import Foundation
import HubHostABI
import Synchronization

/// A `content_provider` plugin: fetches a named resource into host memory.
/// Sendable: `handle` and `lock` are `let`s; every in-process `fetch` call runs under `lock`, as the header's
/// [host-serialized] asks.
public final class ContentProviderPlugin: Sendable {
    /// The plugin this adapter calls, in this process or in a worker.
    public let handle: PluginHandle
    private let lock = NSLock()  // fetch is [host-serialized]; an NSLock, not a Mutex: it guards the C call, no state

    /// Wraps an instance created in this process; the caller checks its kind first.
    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    /// Wraps a loaded plugin of this kind (e.g. from `PluginRegistry.plugins(of:)`).
    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .contentProvider, "ContentProviderPlugin needs a content_provider plugin")
        self.handle = handle
    }

    /// What `fetch` brought back: the plugin's status and message, the bytes it wrote and its last progress.
    public struct Fetched: Equatable, Sendable {
        /// The plugin's hh_status_t: HH_OK (0) when every byte was written, HH_ERR_NOT_FOUND for no such resource;
        /// HH_ERR_TIMEOUT when an in-process plugin overran, HH_ERR_UNAVAILABLE when it is ejected, HH_ERR_IO when
        /// an isolated one's worker failed.
        public var status: Int32
        /// Why it failed (the plugin's report_error, then why the host's HTTP service failed, if it did); empty on HH_OK.
        public var message: String
        /// The bytes the plugin wrote (in process, at most `fetch`'s `limit`); use them only when `status` is HH_OK.
        public var data: Data
        /// The last (done, total) the plugin reported, if any.
        public var progress: (done: UInt64, total: UInt64)?

        public static func == (a: Fetched, b: Fetched) -> Bool {
            a.status == b.status && a.message == b.message && a.data == b.data
                && a.progress?.done == b.progress?.done && a.progress?.total == b.progress?.total
        }
    }

    /// Fetches `resource`, keeping at most `limit` bytes (the sink refuses more with HH_ERR_IO, and
    /// the failure's message then names the limit). A failure's message ends with why the host's
    /// HTTP service failed, when it did.
    /// Waits for an in-process plugin at most `deadlineSeconds`: one that overran answers
    /// HH_ERR_TIMEOUT and is stuck (later calls answer at once until it returns; health reports it).
    /// An isolated one has its worker's call_timeout.
    /// A plugin ejected after failing calls in a row answers HH_ERR_UNAVAILABLE at once.
    public func fetch(_ resource: String, limit: Int = 1 << 30, deadlineSeconds: Double = PluginHandle.contentCallDeadlineSeconds) -> Fetched {
        handle.unlessEjected(
            { fetchInAnyRuntime(resource, limit: limit, deadlineSeconds: deadlineSeconds) },
            verdict: { PluginEjection.verdict(status: $0.status, message: $0.message) })
            ?? Fetched(status: HH_ERR_UNAVAILABLE, message: handle.ejectedMessage, data: Data())
    }

    private func fetchInAnyRuntime(_ resource: String, limit: Int, deadlineSeconds: Double) -> Fetched {
        guard handle.instance != nil else { return IsolatedCalls.fetch(handle, resource) }
        return handle.withDeadline(deadlineSeconds) { [self] in fetchWithoutDeadline(resource, limit: limit) }
            ?? Fetched(status: HH_ERR_TIMEOUT, message: PluginHandle.overranMessage(deadlineSeconds), data: Data())
    }

    private func fetchWithoutDeadline(_ resource: String, limit: Int) -> Fetched {
        guard let instance = handle.instance else { return IsolatedCalls.fetch(handle, resource) }
        let api = instance.api(hh_content_provider_v1_t.self)
        final class Collector {
            var data = Data()
            var progress: (UInt64, UInt64)?
            /// The plugin offered more than `limit` bytes.
            var overLimit = false
            let limit: Int
            init(limit: Int) { self.limit = limit }
        }
        let collector = Collector(limit: limit)
        var sink = hh_content_sink_t(
            sink_data: Unmanaged.passUnretained(collector).toOpaque(),
            write: { sink, bytes, length in
                let collector = Unmanaged<Collector>.fromOpaque(sink!.pointee.sink_data).takeUnretainedValue()
                guard collector.data.count + length <= collector.limit else {
                    collector.overLimit = true
                    return HH_ERR_IO
                }
                if let bytes, length > 0 { collector.data.append(bytes.assumingMemoryBound(to: UInt8.self), count: length) }
                return HH_OK
            },
            progress: { sink, done, total in
                Unmanaged<Collector>.fromOpaque(sink!.pointee.sink_data).takeUnretainedValue().progress = (done, total)
            },
            is_cancelled: { _ in false })
        let status = withExtendedLifetime(collector) {
            lock.withLock {
                _ = instance.takeHTTPFailure()  // an earlier call's, not this fetch's
                return api.pointee.fetch(instance.handle, resource, &sink)
            }
        }
        var message = ""
        if status != HH_OK {
            message = instance.takeError()
            if collector.overLimit {
                let size = limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes"
                let why = "larger than \(size), the most the host keeps for this resource"
                message = message.isEmpty ? "the answer is \(why)" : "\(message): it is \(why)"
            }
            message = Self.adding(instance.takeHTTPFailure(), to: message)
        }
        return Fetched(status: status, message: message, data: collector.data, progress: collector.progress.map { (done: $0.0, total: $0.1) })
    }

    /// The plugin's report, followed by why the host's HTTP service failed (`failure`), if it did.
    static func adding(_ failure: String?, to message: String) -> String {
        guard let failure else { return message }
        return message.isEmpty ? failure : "\(message) (\(failure))"
    }

    /// Where `stream` sends what the plugin fetched. `write` answers false to stop the fetch (the
    /// plugin then gets HH_ERR_IO); `isCancelled` is polled by the plugin between chunks.
    public struct Sink {
        /// Takes each chunk the plugin writes, borrowed for the call only; answers false to stop the fetch.
        public var write: (UnsafeRawBufferPointer) -> Bool
        /// Hears the plugin's progress: bytes done and the total (0 when unknown).
        public var progress: (_ done: UInt64, _ total: UInt64) -> Void
        /// Answers true to ask the plugin to stop early; polled between chunks, so it must be cheap.
        public var isCancelled: () -> Bool

        /// A sink writing with `write`; by default progress is ignored and the fetch is never cancelled.
        public init(
            write: @escaping (UnsafeRawBufferPointer) -> Bool, progress: @escaping (UInt64, UInt64) -> Void = { _, _ in },
            isCancelled: @escaping () -> Bool = { false }
        ) {
            self.write = write
            self.progress = progress
            self.isCancelled = isCancelled
        }
    }

    /// Fetches `resource` straight into `sink` (a file, for bundles), with the plugin's progress and
    /// cancellation. Returns the plugin's status and error message. An isolated instance answers in
    /// one piece (its worker collects the bytes), which is then written and reported at once.
    /// An in-process plugin is waited for at most `deadlineSeconds` (it should stop sooner, when
    /// `isCancelled` says so): one that overran answers HH_ERR_TIMEOUT, is stuck until it returns,
    /// and whatever it writes after the deadline is refused, never reaching `sink`.
    public func stream(
        _ resource: String, into sink: Sink, deadlineSeconds: Double = PluginHandle.contentCallDeadlineSeconds
    ) -> (status: Int32, message: String) {
        handle.unlessEjected(
            { streamInAnyRuntime(resource, into: sink, deadlineSeconds: deadlineSeconds) },
            verdict: { PluginEjection.verdict(status: $0.status, message: $0.message) })
            ?? (HH_ERR_UNAVAILABLE, handle.ejectedMessage)
    }

    private func streamInAnyRuntime(_ resource: String, into sink: Sink, deadlineSeconds: Double) -> (status: Int32, message: String) {
        guard handle.instance != nil else { return streamWithoutDeadline(resource, into: sink) }
        let gate = SinkGate(sink)
        let answer = handle.withDeadline(deadlineSeconds) { [self] in gate.forward { streamWithoutDeadline(resource, into: $0) } }
        gate.close()
        return answer ?? (HH_ERR_TIMEOUT, PluginHandle.overranMessage(deadlineSeconds))
    }

    private func streamWithoutDeadline(_ resource: String, into sink: Sink) -> (status: Int32, message: String) {
        guard let instance = handle.instance else {
            let fetched = IsolatedCalls.fetch(handle, resource)
            guard fetched.status == HH_OK else { return (fetched.status, fetched.message) }
            let accepted = fetched.data.withUnsafeBytes { sink.write($0) }
            guard accepted else { return (HH_ERR_IO, "the host refused the data") }
            sink.progress(UInt64(fetched.data.count), UInt64(fetched.data.count))
            return (HH_OK, "")
        }
        let api = instance.api(hh_content_provider_v1_t.self)
        final class Box {
            let sink: Sink
            init(_ sink: Sink) { self.sink = sink }
        }
        let box = Box(sink)
        var table = hh_content_sink_t(
            sink_data: Unmanaged.passUnretained(box).toOpaque(),
            write: { sink, bytes, length in
                let box = Unmanaged<Box>.fromOpaque(sink!.pointee.sink_data).takeUnretainedValue()
                guard length > 0 else { return HH_OK }
                guard let bytes else { return HH_ERR_INVALID_ARGUMENT }
                return box.sink.write(UnsafeRawBufferPointer(start: bytes, count: length)) ? HH_OK : HH_ERR_IO
            },
            progress: { sink, done, total in
                Unmanaged<Box>.fromOpaque(sink!.pointee.sink_data).takeUnretainedValue().sink.progress(done, total)
            },
            is_cancelled: { sink in
                Unmanaged<Box>.fromOpaque(sink!.pointee.sink_data).takeUnretainedValue().sink.isCancelled()
            })
        let status = withExtendedLifetime(box) {
            lock.withLock {
                _ = instance.takeHTTPFailure()  // an earlier call's, not this fetch's
                return api.pointee.fetch(instance.handle, resource, &table)
            }
        }
        return (status, status == HH_OK ? "" : Self.adding(instance.takeHTTPFailure(), to: instance.takeError()))
    }
}

/// A stream's sink as a call with a deadline sees it: forwarded while open; once the caller gave up
/// (`close`), writes are refused and the plugin is told it is cancelled. `close` waits for a
/// forwarded write in progress, so nothing reaches the sink after it returns.
/// Unchecked Sendable: the caller's sink (closures, not Sendable) is called from the plugin-call thread, only while
/// holding the `open` Mutex and never after `close`.
private final class SinkGate: @unchecked Sendable {
    private let open = Mutex(true)
    private let sink: ContentProviderPlugin.Sink

    init(_ sink: ContentProviderPlugin.Sink) { self.sink = sink }

    func forward<T>(_ body: (ContentProviderPlugin.Sink) -> T) -> T {
        body(
            ContentProviderPlugin.Sink(
                write: { [self] bytes in open.withLock { $0 && sink.write(bytes) } },
                progress: { [self] done, total in open.withLock { if $0 { sink.progress(done, total) } } },
                isCancelled: { [self] in open.withLock { !$0 || sink.isCancelled() } }))
    }

    func close() { open.withLock { $0 = false } }
}

// MARK: Over the wire

extension IsolatedCalls {
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

    // The worker side.
    static let contentProviderServers: [WorkerOp: Server] = [
        .fetch: { handle, request, out in
            let fetched = ContentProviderPlugin(handle).fetch(try request.string())
            out.i32(fetched.status)
            out.string(fetched.message)
            out.data(fetched.data)
        }
    ]
}
