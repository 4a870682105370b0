// static-advertiser-id: the bundled advertiser-ID delegate (ZBiM "Metrics" section).
//
// It takes the advertiser ID and the "limit ad tracking" flag from its configuration, or from
// environment variables its configuration names (so a deployment can set them per machine).
// With limit ad tracking on, no advertiser ID is used at all.
//
// Written in Swift to show a plugin exporting the C ABI with @_cdecl; it imports only the
// protocol module, never HubHostKit.
import HubHostABI

#if canImport(Glibc)
import Glibc
#endif

/// One configured instance. Immutable after create, so `advertiser_id` is thread-safe.
private final class StaticAdvertiserID {
    let advertiserID: String?
    let limitAdTracking: Bool

    init(advertiserID: String?, limitAdTracking: Bool) {
        self.advertiserID = advertiserID
        self.limitAdTracking = limitAdTracking
    }
}

private func configString(_ host: UnsafePointer<hh_host_t>, _ key: String) -> String? {
    var value = hh_value_t()
    guard host.pointee.config_get(host, key, &value) == HH_OK, value.type == HH_VALUE_STRING else { return nil }
    let s = value.of.string
    guard let data = s.data else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: data, count: s.length), as: UTF8.self)
}

private func configBool(_ host: UnsafePointer<hh_host_t>, _ key: String) -> Bool? {
    var value = hh_value_t()
    guard host.pointee.config_get(host, key, &value) == HH_OK, value.type == HH_VALUE_BOOL else { return nil }
    return value.of.boolean
}

private func environment(_ name: String?) -> String? {
    guard let name, !name.isEmpty, let raw = getenv(name) else { return nil }
    return String(cString: raw)
}

private func parseFlag(_ text: String) -> Bool? {
    switch text.lowercased() {
    case "1", "true", "yes", "on": return true
    case "0", "false", "no", "off", "": return false
    default: return nil
    }
}

private func reportError(_ host: UnsafePointer<hh_host_t>, _ status: hh_status_t, _ message: String) {
    var message = message
    message.withUTF8 { bytes in
        bytes.withMemoryRebound(to: CChar.self) { chars in
            host.pointee.report_error(host, status, hh_string_t(data: chars.baseAddress, length: chars.count))
        }
    }
}

private let createInstance: @convention(c) (UnsafePointer<hh_host_t>?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> hh_status_t = { host, out in
    guard let host, let out else { return HH_ERR_INVALID_ARGUMENT }
    var limit = configBool(host, "limit_ad_tracking") ?? false
    let limitVariable = configString(host, "limit_ad_tracking_env")
    if let text = environment(limitVariable) {
        guard let flag = parseFlag(text) else {
            reportError(host, HH_ERR_CONFIG,
                        "environment variable \(limitVariable!)=\"\(text)\" is not a boolean (use true/false, 1/0, yes/no)")
            return HH_ERR_CONFIG
        }
        limit = flag
    }
    var id = configString(host, "advertiser_id")
    if let fromEnvironment = environment(configString(host, "advertiser_id_env")), !fromEnvironment.isEmpty {
        id = fromEnvironment
    }
    if let value = id, value.isEmpty { id = nil }
    let instance = StaticAdvertiserID(advertiserID: id, limitAdTracking: limit)
    out.pointee = Unmanaged.passRetained(instance).toOpaque()
    return HH_OK
}

private let destroyInstance: @convention(c) (UnsafeMutableRawPointer?) -> Void = { raw in
    guard let raw else { return }
    Unmanaged<StaticAdvertiserID>.fromOpaque(raw).release()
}

private let answer: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<Bool>?, UnsafePointer<hh_string_sink_t>?) -> hh_status_t = { raw, outLimit, sink in
    guard let raw, let outLimit, let sink else { return HH_ERR_INVALID_ARGUMENT }
    let instance = Unmanaged<StaticAdvertiserID>.fromOpaque(raw).takeUnretainedValue()
    if instance.limitAdTracking {
        outLimit.pointee = true
        return HH_OK
    }
    guard var id = instance.advertiserID else { return HH_ERR_NOT_FOUND }  // no opinion: ask the next delegate
    outLimit.pointee = false
    id.withUTF8 { bytes in
        bytes.withMemoryRebound(to: CChar.self) { chars in
            sink.pointee.set(sink.pointee.sink_data, hh_string_t(data: chars.baseAddress, length: chars.count))
        }
    }
    return HH_OK
}

/// Static tables, allocated once and never freed: the ABI requires them to outlive every call.
private let library: UnsafeMutablePointer<hh_library_t> = {
    let api = UnsafeMutablePointer<hh_advertiser_id_v1_t>.allocate(capacity: 1)
    api.initialize(to: hh_advertiser_id_v1_t(advertiser_id: answer))
    let descriptor = UnsafeMutablePointer<hh_plugin_descriptor_t>.allocate(capacity: 1)
    descriptor.initialize(to: hh_plugin_descriptor_t(
        id: UnsafePointer(strdup("static-advertiser-id")),
        name: UnsafePointer(strdup("Static advertiser ID")),
        description: UnsafePointer(strdup("Answers with the advertiser ID and limit-ad-tracking flag from its config or environment.")),
        version: UnsafePointer(strdup("1.0.0")),
        kind: HH_KIND_ADVERTISER_ID,
        kind_api: UnsafeRawPointer(api),
        create: createInstance,
        destroy: destroyInstance,
        get_extension: nil))
    descriptorPointer = UnsafePointer(descriptor)
    let library = UnsafeMutablePointer<hh_library_t>.allocate(capacity: 1)
    library.initialize(to: hh_library_t(
        abi_version: hh_version_t(major: UInt32(HH_ABI_VERSION_MAJOR), minor: UInt32(HH_ABI_VERSION_MINOR),
                                  patch: UInt32(HH_ABI_VERSION_PATCH)),
        init: nil, deinit: nil, plugin_count: 1,
        get_plugin: { index in index == 0 ? descriptorPointer : nil }))
    return library
}()

nonisolated(unsafe) private var descriptorPointer: UnsafePointer<hh_plugin_descriptor_t>?

@_cdecl("hubhost_library_entry")
public func hubhostLibraryEntry() -> UnsafePointer<hh_library_t> {
    UnsafePointer(library)
}
