import Foundation
import HubHostABI

/// A `content_provider` plugin: fetches a named resource into host memory.
public final class ContentProviderPlugin: @unchecked Sendable {
    public let handle: PluginHandle
    private let lock = NSLock()  // fetch is [host-serialized]

    public convenience init(_ instance: PluginInstance) { self.init(PluginHandle(instance)) }

    public init(_ handle: PluginHandle) {
        precondition(handle.kind == .contentProvider, "ContentProviderPlugin needs a content_provider plugin")
        self.handle = handle
    }

    public struct Fetched: Equatable, Sendable {
        public var status: Int32
        public var message: String
        public var data: Data
        /// The last (done, total) the plugin reported, if any.
        public var progress: (done: UInt64, total: UInt64)?

        public static func == (a: Fetched, b: Fetched) -> Bool {
            a.status == b.status && a.message == b.message && a.data == b.data
                && a.progress?.done == b.progress?.done && a.progress?.total == b.progress?.total
        }
    }

    /// Fetches `resource`, keeping at most `limit` bytes (the sink refuses more with HH_ERR_IO).
    public func fetch(_ resource: String, limit: Int = 1 << 30) -> Fetched {
        guard let instance = handle.instance else { return IsolatedCalls.fetch(handle, resource) }
        let api = instance.api(hh_content_provider_v1_t.self)
        final class Collector {
            var data = Data()
            var progress: (UInt64, UInt64)?
            let limit: Int
            init(limit: Int) { self.limit = limit }
        }
        let collector = Collector(limit: limit)
        var sink = hh_content_sink_t(
            sink_data: Unmanaged.passUnretained(collector).toOpaque(),
            write: { sink, bytes, length in
                let collector = Unmanaged<Collector>.fromOpaque(sink!.pointee.sink_data).takeUnretainedValue()
                guard collector.data.count + length <= collector.limit else { return HH_ERR_IO }
                if let bytes, length > 0 { collector.data.append(bytes.assumingMemoryBound(to: UInt8.self), count: length) }
                return HH_OK
            },
            progress: { sink, done, total in
                Unmanaged<Collector>.fromOpaque(sink!.pointee.sink_data).takeUnretainedValue().progress = (done, total)
            },
            is_cancelled: { _ in false })
        let status = withExtendedLifetime(collector) { lock.withLock { api.pointee.fetch(instance.handle, resource, &sink) } }
        return Fetched(status: status, message: status == HH_OK ? "" : instance.takeError(), data: collector.data,
                       progress: collector.progress.map { (done: $0.0, total: $0.1) })
    }
}
