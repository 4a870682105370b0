// location-augmentation: adds Latitude, Longitude, Location Name and Location Address (field names
// configurable, as the Engage UBFFieldNames) to every event, from the host's location service
// (hubhost.location.v1), which asks the location delegates. The cache lifespan and acquisition
// timeout are the Engage LocationServices settings. It answers process_synchronously = true:
// augmentations after it (weather) read the coordinates it adds.
import HubHostABI
import HubHostPluginSupport

#if canImport(Glibc)
    import Glibc
#endif

private final class LocationAugmentation {
    let host: UnsafePointer<hh_host_t>
    let service: UnsafePointer<hh_host_location_v1_t>
    let fields: (latitude: String, longitude: String, name: String, address: String)
    let cacheLifespanMs: Int64
    let acquisitionTimeoutMs: Int64

    init(
        host: UnsafePointer<hh_host_t>, service: UnsafePointer<hh_host_location_v1_t>,
        fields: (String, String, String, String), cacheLifespanMs: Int64, acquisitionTimeoutMs: Int64
    ) {
        self.host = host
        self.service = service
        self.fields = fields
        self.cacheLifespanMs = cacheLifespanMs
        self.acquisitionTimeoutMs = acquisitionTimeoutMs
    }
}

private func seconds(_ host: UnsafePointer<hh_host_t>, _ key: String, _ fallback: Double) -> Double {
    guard let value = host.config(key) else { return fallback }
    if value.type == HH_VALUE_DOUBLE { return value.of.real }
    if value.type == HH_VALUE_INT64 { return Double(value.of.int64) }
    return fallback
}

private let createInstance: @convention(c) (UnsafePointer<hh_host_t>?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> hh_status_t = {
    host, out in
    guard let host, let out else { return HH_ERR_INVALID_ARGUMENT }
    guard let raw = host.pointee.get_extension(host, HH_HOST_EXT_LOCATION) else {
        host.reportError(
            HH_ERR_UNSUPPORTED,
            "no location service: add a location plugin (e.g. fixed-location) before this one in plugins.yaml, and run this one in_process")
        return HH_ERR_UNSUPPORTED
    }
    let lifespan = seconds(host, "cache_lifespan", 3600)
    let timeout = seconds(host, "acquisition_timeout", 15)
    guard lifespan >= 0, timeout > 0 else {
        host.reportError(HH_ERR_CONFIG, "'cache_lifespan' must not be negative and 'acquisition_timeout' must be positive")
        return HH_ERR_CONFIG
    }
    let instance = LocationAugmentation(
        host: host, service: raw.assumingMemoryBound(to: hh_host_location_v1_t.self),
        fields: (
            host.configString("latitude_field") ?? "Latitude", host.configString("longitude_field") ?? "Longitude",
            host.configString("location_name_field") ?? "Location Name", host.configString("location_address_field") ?? "Location Address"
        ),
        cacheLifespanMs: Int64(lifespan * 1000), acquisitionTimeoutMs: Int64(timeout * 1000))
    out.pointee = Unmanaged.passRetained(instance).toOpaque()
    return HH_OK
}

private let destroyInstance: @convention(c) (UnsafeMutableRawPointer?) -> Void = { raw in
    guard let raw else { return }
    Unmanaged<LocationAugmentation>.fromOpaque(raw).release()
}

private let alwaysTrue: @convention(c) (UnsafeMutableRawPointer?) -> Bool = { _ in true }

private func set(_ editor: UnsafePointer<hh_event_editor_t>, _ name: String, _ value: hh_value_t) -> hh_status_t {
    var name = name
    var value = value
    return name.withUTF8 { bytes in editor.pointee.set_attribute(editor, hh_string_t(bytes), &value) }
}

private func setText(_ editor: UnsafePointer<hh_event_editor_t>, _ name: String, _ text: hh_string_t) -> hh_status_t {
    var value = hh_value_t()
    value.type = HH_VALUE_STRING
    value.of.string = text
    return set(editor, name, value)
}

/// [thread-safe]: the instance is immutable and the host's location service is thread-safe.
private let augment: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<hh_event_view_t>?, UnsafePointer<hh_event_editor_t>?) -> hh_status_t = {
    raw, _, editor in
    guard let raw, let editor else { return HH_ERR_INVALID_ARGUMENT }
    let me = Unmanaged<LocationAugmentation>.fromOpaque(raw).takeUnretainedValue()
    var location = hh_location_t()
    let status = me.service.pointee.get_location(me.host, me.cacheLifespanMs, me.acquisitionTimeoutMs, &location)
    guard status == HH_OK else {
        // The event goes on without a location, as the Engage SDK posts it without one.
        if status == HH_ERR_TIMEOUT { me.host.log(HH_SEVERITY_WARNING, "no location within the acquisition timeout; event sent without one") }
        return HH_OK
    }
    defer { me.service.pointee.release_location(me.host, &location) }
    var result = HH_OK
    if location.has_coordinates {
        var value = hh_value_t()
        value.type = HH_VALUE_DOUBLE
        value.of.real = location.latitude
        result = set(editor, me.fields.latitude, value)
        value.of.real = location.longitude
        if result == HH_OK { result = set(editor, me.fields.longitude, value) }
    }
    if result == HH_OK, location.name.length > 0 { result = setText(editor, me.fields.name, location.name) }
    if result == HH_OK, location.address.length > 0 { result = setText(editor, me.fields.address, location.address) }
    return result
}

// The library table is made once, on first use, and never changed; the host only reads it.
nonisolated(unsafe) private let library = SwiftPluginLibrary.make([
    SwiftPluginSpec(
        id: "location-augmentation", name: "Location augmentation",
        description: "Adds Latitude, Longitude, Location Name and Location Address from the location delegates.",
        version: "1.0.0", kind: HH_KIND_AUGMENTATION,
        kindAPI: SwiftPluginLibrary.table(
            hh_augmentation_v1_t(
                process_synchronously: alwaysTrue, is_supplemental_data_ready: alwaysTrue,
                augment: augment)),
        create: createInstance, destroy: destroyInstance)
])

@_cdecl("hubhost_library_entry")
public func hubhostLibraryEntry() -> UnsafePointer<hh_library_t> {
    library
}
