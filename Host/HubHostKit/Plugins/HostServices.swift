import Foundation
import HubHostABI
import Synchronization

/// The services table (hh_host_t) the host gives one plugin instance: logging through the
/// pipeline, typed config lookup, a monotonic clock, error reports and extension lookup.
///
/// Everything a plugin may keep a pointer to (the table, the instance id, the data directory, config
/// strings) is allocated here once and freed only when the instance is destroyed.
/// Unchecked Sendable: it owns the C table and strings the plugin points at (`table`, `ownedStrings`,
/// `configStrings`: written only in init, only read after); the per-thread reports and the delivery's traceparents
/// are Mutexes; the rest are `let`s.
final class HostServices: @unchecked Sendable {
    let instanceID: String
    let pipeline: LogPipeline
    let environment: HostEnvironment
    let table: UnsafeMutablePointer<hh_host_t>
    private let config: [String: PluginValue]
    /// NUL-terminated copies of string config values and of the two path strings.
    private var ownedStrings: [UnsafeMutablePointer<CChar>] = []
    private var configStrings: [String: UnsafeMutablePointer<CChar>] = [:]
    /// What each thread reported, by thread.
    private struct ThreadReports {
        var lastErrors: [UInt: (status: Int32, message: String)] = [:]
        /// Why each thread's last HTTP service request failed, when the status alone does not say.
        var httpFailures: [UInt: String] = [:]
    }
    private let reports = Mutex(ThreadReports())
    /// The traceparents of the batch an event_sink's deliver call is running on, NUL-terminated
    /// copies by event index ("hubhost.event_trace.v1"); set for the call, freed after it.
    let deliveryTraceparents = Mutex<[Int: UnsafeMutablePointer<CChar>]>([:])

    init(
        instanceID: String, config: [String: PluginValue], dataDirectory: String, pipeline: LogPipeline,
        environment: HostEnvironment = HostEnvironment()
    ) {
        self.instanceID = instanceID
        self.environment = environment
        self.config = config
        self.pipeline = pipeline
        table = .allocate(capacity: 1)
        for (key, value) in config {
            if case .string(let text) = value { configStrings[key] = own(text) }
        }
        table.initialize(
            to: hh_host_t(
                abi_version: ABIVersion.host.raw,
                host_data: nil,
                instance_id: UnsafePointer(own(instanceID)),
                data_directory: UnsafePointer(own(dataDirectory)),
                log: hostLog, config_get: hostConfigGet, monotonic_ns: hostMonotonicNs,
                report_error: hostReportError, get_extension: hostGetExtension))
        table.pointee.host_data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        table.deinitialize(count: 1)
        table.deallocate()
        for pointer in ownedStrings { free(pointer) }
    }

    private func own(_ text: String) -> UnsafeMutablePointer<CChar> {
        let pointer = strdup(text)!
        ownedStrings.append(pointer)
        return pointer
    }

    static func from(_ host: UnsafePointer<hh_host_t>?) -> HostServices? {
        guard let data = host?.pointee.host_data else { return nil }
        return Unmanaged<HostServices>.fromOpaque(data).takeUnretainedValue()
    }

    func value(for key: String, into out: UnsafeMutablePointer<hh_value_t>) -> hh_status_t {
        guard let value = config[key] else { return HH_ERR_NOT_FOUND }
        var result = hh_value_t()
        switch value {
        case .null: result.type = HH_VALUE_NULL
        case .string:
            let pointer = configStrings[key]!
            result.type = HH_VALUE_STRING
            result.of.string = hh_string_t(data: UnsafePointer(pointer), length: strlen(pointer))
        case .int(let i):
            result.type = HH_VALUE_INT64
            result.of.int64 = i
        case .double(let d):
            result.type = HH_VALUE_DOUBLE
            result.of.real = d
        case .bool(let b):
            result.type = HH_VALUE_BOOL
            result.of.boolean = b
        case .timeMs(let t):
            result.type = HH_VALUE_TIME_MS
            result.of.time_ms = t
        }
        out.pointee = result
        return HH_OK
    }

    func recordError(_ status: Int32, _ message: String) {
        reports.withLock { $0.lastErrors[UInt(bitPattern: Int(bitPattern: pthread_self()))] = (status, message) }
    }

    /// The message this thread's last report_error left, cleared on read.
    func takeError() -> String {
        reports.withLock { $0.lastErrors.removeValue(forKey: UInt(bitPattern: Int(bitPattern: pthread_self())))?.message ?? "" }
    }

    /// Notes why this thread's HTTP service request failed with HH_ERR_IO (an unreachable server,
    /// a transfer cut, an answer over HTTPFetcher.maxBodyBytes): the plugin only sees the status,
    /// so the host adds this to the plugin's report where it reads one (ContentProviderPlugin).
    func noteHTTPFailure(_ why: String) {
        reports.withLock { $0.httpFailures[UInt(bitPattern: Int(bitPattern: pthread_self()))] = why }
    }

    /// Why this thread's last HTTP service request failed, if one did since the last read; cleared on read.
    func takeHTTPFailure() -> String? {
        reports.withLock { $0.httpFailures.removeValue(forKey: UInt(bitPattern: Int(bitPattern: pthread_self()))) }
    }
}

private let hostLog: @convention(c) (UnsafePointer<hh_host_t>?, hh_severity_t, hh_verbosity_t, hh_string_t) -> Void = {
    host, severity, verbosity, message in
    guard let services = HostServices.from(host),
        let severity = LogSeverity(rawValue: severity), severity != .none,
        let verbosity = LogVerbosity(rawValue: verbosity), verbosity != .none
    else { return }
    guard services.pipeline.allows(severity: severity, verbosity: verbosity) else { return }
    services.pipeline.log(severity, verbosity, source: services.instanceID, lossyUTF8(message))
}

private let hostConfigGet: @convention(c) (UnsafePointer<hh_host_t>?, UnsafePointer<CChar>?, UnsafeMutablePointer<hh_value_t>?) -> hh_status_t = {
    host, key, out in
    guard let services = HostServices.from(host), let key, let out else { return HH_ERR_INVALID_ARGUMENT }
    return services.value(for: String(cString: key), into: out)
}

private let hostMonotonicNs: @convention(c) (UnsafePointer<hh_host_t>?) -> UInt64 = { _ in
    Clock.monotonicNs()
}

private let hostReportError: @convention(c) (UnsafePointer<hh_host_t>?, hh_status_t, hh_string_t) -> Void = { host, status, message in
    HostServices.from(host)?.recordError(status, lossyUTF8(message))
}

/// "hubhost.http.v1" and, when there are location delegates, "hubhost.location.v1".
private let hostGetExtension: @convention(c) (UnsafePointer<hh_host_t>?, UnsafePointer<CChar>?) -> UnsafeRawPointer? = { host, id in
    guard let services = HostServices.from(host), let id else { return nil }
    return HostExtensions.lookup(String(cString: id), for: services)
}
