import Foundation
import HubHostABI
import Synchronization

/// "hubhost.event_trace.v1" (hubhost_event_sink.h): an event_sink's deliver call reads the W3C
/// traceparent of each event of its batch, to send it on as a message header.
extension HostServices {
    /// Runs `deliver` (one deliver call of this instance) with `traceparents` (by event index)
    /// readable through the extension; the copies are freed once it returns. Nothing is copied for
    /// a batch without traceparents.
    func withDeliveryTraceparents<T>(_ traceparents: [Int: String], _ deliver: () -> T) -> T {
        guard !traceparents.isEmpty else { return deliver() }
        deliveryTraceparents.withLock { held in held = traceparents.mapValues { strdup($0)! } }
        defer {
            deliveryTraceparents.withLock { held in
                for pointer in held.values { free(pointer) }
                held = [:]
            }
        }
        return deliver()
    }

    /// The traceparent of event `index` of the batch being delivered; {NULL, 0} when it has none
    /// or no deliver call is running.
    func deliveryTraceparent(at index: Int) -> hh_string_t {
        deliveryTraceparents.withLock {
            guard let pointer = $0[index] else { return hh_string_t(data: nil, length: 0) }
            return hh_string_t(data: UnsafePointer(pointer), length: strlen(pointer))
        }
    }
}

let eventTraceparent: @convention(c) (UnsafePointer<hh_host_t>?, Int) -> hh_string_t = { host, index in
    guard let services = HostServices.from(host) else { return hh_string_t(data: nil, length: 0) }
    return services.deliveryTraceparent(at: index)
}
