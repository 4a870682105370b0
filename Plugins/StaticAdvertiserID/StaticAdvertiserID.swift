// static-advertiser-id: the bundled advertiser-ID delegate (ZBiM "Metrics" section).
//
// It takes the advertiser ID and the "limit ad tracking" flag from its configuration, or from
// environment variables its configuration names (so a deployment can set them per machine).
// With limit ad tracking on, no advertiser ID is used at all.
//
// Written in Swift to show a plugin exporting the C ABI with @_cdecl; it imports only the
// protocol module, never HubHostKit.
import HubHostABI
import HubHostPluginSupport

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

private let createInstance: @convention(c) (UnsafePointer<hh_host_t>?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> hh_status_t = {
    host, out in
    guard let host, let out else { return HH_ERR_INVALID_ARGUMENT }
    var limit = host.configBool("limit_ad_tracking") ?? false
    let limitVariable = host.configString("limit_ad_tracking_env")
    if let text = environment(limitVariable) {
        guard let flag = parseFlag(text) else {
            host.reportError(
                HH_ERR_CONFIG,
                "environment variable \(limitVariable!)=\"\(text)\" is not a boolean (use true/false, 1/0, yes/no)")
            return HH_ERR_CONFIG
        }
        limit = flag
    }
    var id = host.configString("advertiser_id")
    if let fromEnvironment = environment(host.configString("advertiser_id_env")), !fromEnvironment.isEmpty {
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

private let answer: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<Bool>?, UnsafePointer<hh_string_sink_t>?) -> hh_status_t = {
    raw, outLimit, sink in
    guard let raw, let outLimit, let sink else { return HH_ERR_INVALID_ARGUMENT }
    let instance = Unmanaged<StaticAdvertiserID>.fromOpaque(raw).takeUnretainedValue()
    if instance.limitAdTracking {
        outLimit.pointee = true
        return HH_OK
    }
    guard var id = instance.advertiserID else { return HH_ERR_NOT_FOUND }  // no opinion: ask the next delegate
    outLimit.pointee = false
    id.withUTF8 { bytes in sink.pointee.set(sink.pointee.sink_data, hh_string_t(bytes)) }
    return HH_OK
}

// The library table is made once, on first use, and never changed; the host only reads it.
nonisolated(unsafe) private let library = SwiftPluginLibrary.make([
    SwiftPluginSpec(
        id: "static-advertiser-id", name: "Static advertiser ID",
        description: "Answers with the advertiser ID and limit-ad-tracking flag from its config or environment.",
        version: "1.0.0", kind: HH_KIND_ADVERTISER_ID,
        kindAPI: SwiftPluginLibrary.table(hh_advertiser_id_v1_t(advertiser_id: answer)),
        create: createInstance, destroy: destroyInstance)
])

@_cdecl("hubhost_library_entry")
public func hubhostLibraryEntry() -> UnsafePointer<hh_library_t> {
    library
}
