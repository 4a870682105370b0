import Foundation
import HubHostABI

/// The host extensions' C tables ("hubhost.http.v1", "hubhost.location.v1"), allocated once.
/// Each table is initialised once and never written again, so plugins on any thread may read it:
/// that is why the pointers are `nonisolated(unsafe)`.
enum HostExtensions {
    static let fetcher = HTTPFetcher()

    nonisolated(unsafe) static let http: UnsafeMutablePointer<hh_host_http_v1_t> = {
        let table = UnsafeMutablePointer<hh_host_http_v1_t>.allocate(capacity: 1)
        table.initialize(to: hh_host_http_v1_t(fetch: httpFetch, release: httpRelease))
        return table
    }()

    nonisolated(unsafe) static let location: UnsafeMutablePointer<hh_host_location_v1_t> = {
        let table = UnsafeMutablePointer<hh_host_location_v1_t>.allocate(capacity: 1)
        table.initialize(to: hh_host_location_v1_t(get_location: locationGet, release_location: locationRelease))
        return table
    }()

    nonisolated(unsafe) static let eventAuth: UnsafeMutablePointer<hh_host_event_auth_v1_t> = {
        let table = UnsafeMutablePointer<hh_host_event_auth_v1_t>.allocate(capacity: 1)
        table.initialize(to: hh_host_event_auth_v1_t(get_token: eventAuthGetToken))
        return table
    }()

    nonisolated(unsafe) static let eventTrace: UnsafeMutablePointer<hh_host_event_trace_v1_t> = {
        let table = UnsafeMutablePointer<hh_host_event_trace_v1_t>.allocate(capacity: 1)
        table.initialize(to: hh_host_event_trace_v1_t(traceparent: eventTraceparent))
        return table
    }()

    static func lookup(_ id: String, for services: HostServices) -> UnsafeRawPointer? {
        switch id {
        case HH_HOST_EXT_HTTP: return UnsafeRawPointer(http)
        case HH_HOST_EXT_EVENT_AUTH: return services.environment.eventAuth == nil ? nil : UnsafeRawPointer(eventAuth)
        case HH_HOST_EXT_EVENT_TRACE: return UnsafeRawPointer(eventTrace)
        case HH_HOST_EXT_LOCATION: return services.environment.location?.hasDelegates == true ? UnsafeRawPointer(location) : nil
        default: return nil
        }
    }

    static func copy(_ text: String) -> hh_string_t {
        // withCString lends a native String's own NUL-terminated storage: no intermediate array
        // (a String passed to strdup as is was converted to one, allocated and freed, per copy).
        let pointer = text.withCString { strdup($0)! }
        return hh_string_t(data: UnsafePointer(pointer), length: strlen(pointer))
    }

    static func free(_ s: hh_string_t) {
        if let data = s.data { Glibc.free(UnsafeMutableRawPointer(mutating: data)) }
    }
}

private let httpFetch:
    @convention(c) (UnsafePointer<hh_host_t>?, UnsafePointer<hh_http_request_t>?, UnsafeMutablePointer<hh_http_response_t>?) -> hh_status_t = {
        host, request, out in
        guard let services = HostServices.from(host), let request, let out else { return HH_ERR_INVALID_ARGUMENT }
        let r = request.pointee
        var headers: [String: String] = [:]
        for i in 0..<r.header_count {
            guard let header = r.headers?[i] else { break }
            headers[lossyUTF8(header.name)] = lossyUTF8(header.value)
        }
        let body = r.body_length > 0 && r.body != nil ? Data(bytes: r.body!, count: r.body_length) : nil
        let call = PluginHTTPRequest(
            method: r.method.length == 0 ? "GET" : lossyUTF8(r.method), url: lossyUTF8(r.url), headers: headers, body: body,
            timeoutMs: r.timeout_ms)
        switch call.perform(policy: services.environment.http, instanceID: services.instanceID, pipeline: services.pipeline) {
        case .success(let response):
            var result = hh_http_response_t()
            result.status_code = Int32(response.status)
            let buffer = malloc(max(1, response.body.count))!
            response.body.copyBytes(to: buffer.assumingMemoryBound(to: UInt8.self), count: response.body.count)
            result.body = UnsafeRawPointer(buffer)
            result.body_length = response.body.count
            let table = UnsafeMutablePointer<hh_http_header_t>.allocate(capacity: max(1, response.headers.count))
            for (i, (name, value)) in response.headers.enumerated() {
                table[i] = hh_http_header_t(name: HostExtensions.copy(name), value: HostExtensions.copy(value))
            }
            result.headers = UnsafePointer(table)
            result.header_count = response.headers.count
            out.pointee = result
            return HH_OK
        case .failure(let failure):
            if let report = failure.report { services.recordError(failure.status, report) }
            if let why = failure.ioFailure { services.noteHTTPFailure(why) }
            return failure.status
        }
    }

private let httpRelease: @convention(c) (UnsafePointer<hh_host_t>?, UnsafeMutablePointer<hh_http_response_t>?) -> Void = { _, response in
    guard let response else { return }
    if let body = response.pointee.body { free(UnsafeMutableRawPointer(mutating: body)) }
    if let headers = response.pointee.headers {
        for i in 0..<response.pointee.header_count {
            HostExtensions.free(headers[i].name)
            HostExtensions.free(headers[i].value)
        }
        UnsafeMutablePointer(mutating: headers).deallocate()
    }
    response.pointee = hh_http_response_t()
}

private let locationGet: @convention(c) (UnsafePointer<hh_host_t>?, Int64, Int64, UnsafeMutablePointer<hh_location_t>?) -> hh_status_t = {
    host, maxAge, timeout, out in
    guard let out else { return HH_ERR_INVALID_ARGUMENT }
    out.pointee = hh_location_t()  // zero-filled first, as the header promises, whatever the answer
    guard let services = HostServices.from(host), let service = services.environment.location else { return HH_ERR_UNAVAILABLE }
    let (text, status) = service.currentText(maxAgeMs: maxAge, timeoutMs: timeout)
    text?.lend(to: out)
    return status
}

private let locationRelease: @convention(c) (UnsafePointer<hh_host_t>?, UnsafeMutablePointer<hh_location_t>?) -> Void = { _, location in
    guard let location else { return }
    LocationCText.release(location)
}

/// "hubhost.event_auth.v1" get_token: the delivery's access token into the plugin's buffer.
private let eventAuthGetToken:
    @convention(c) (
        UnsafePointer<hh_host_t>?, Bool, UnsafeMutablePointer<CChar>?, Int,
        UnsafeMutablePointer<Int>?
    ) -> hh_status_t = { host, forceRefresh, out, capacity, outLength in
        guard let services = HostServices.from(host), let out, capacity > 0 else { return HH_ERR_INVALID_ARGUMENT }
        guard let tokens = services.environment.eventAuth else { return HH_ERR_NOT_FOUND }
        switch tokens.token(forceRefresh: forceRefresh) {
        case .success(let token):
            let bytes = Array(token.utf8)
            outLength?.pointee = bytes.count
            guard bytes.count < capacity else {
                services.recordError(HH_ERR_INVALID_ARGUMENT, "the access token has \(bytes.count) bytes; the buffer holds \(capacity - 1)")
                return HH_ERR_INVALID_ARGUMENT
            }
            _ = bytes.withUnsafeBufferPointer { memcpy(out, $0.baseAddress!, bytes.count) }
            out[bytes.count] = 0
            return HH_OK
        case .failure(let failure):
            services.recordError(HH_ERR_UNAVAILABLE, failure.reason)
            return HH_ERR_UNAVAILABLE
        }
    }
