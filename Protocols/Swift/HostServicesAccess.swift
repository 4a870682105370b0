import HubHostABI

/// Typed access to the host services table from Swift plugins.
extension UnsafePointer where Pointee == hh_host_t {
    /// The config value for `key`, or nil when it has none (not set and no default).
    public func config(_ key: String) -> hh_value_t? {
        var value = hh_value_t()
        return pointee.config_get(self, key, &value) == HH_OK ? value : nil
    }

    public func configString(_ key: String) -> String? {
        guard let value = config(key), value.type == HH_VALUE_STRING else { return nil }
        return String(value.of.string)
    }

    public func configBool(_ key: String) -> Bool? {
        guard let value = config(key), value.type == HH_VALUE_BOOL else { return nil }
        return value.of.boolean
    }

    public func configInt(_ key: String) -> Int64? {
        guard let value = config(key), value.type == HH_VALUE_INT64 else { return nil }
        return value.of.int64
    }

    /// Explains a failure; call before returning a non-HH_OK status.
    public func reportError(_ status: hh_status_t, _ message: String) {
        var message = message
        message.withUTF8 { bytes in
            pointee.report_error(self, status, hh_string_t(bytes))
        }
    }

    /// Logs through the host's pipeline (filtered by the host's severity and verbosity).
    public func log(_ severity: hh_severity_t, _ message: String, verbosity: hh_verbosity_t = HH_VERBOSITY_DEBUG) {
        var message = message
        message.withUTF8 { bytes in pointee.log(self, severity, verbosity, hh_string_t(bytes)) }
    }
}

extension String {
    /// Text from an hh_string_t; invalid UTF-8 becomes U+FFFD.
    public init(_ s: hh_string_t) {
        guard let data = s.data, s.length > 0 else {
            self = ""
            return
        }
        self = String(decoding: UnsafeRawBufferPointer(start: data, count: s.length), as: UTF8.self)
    }
}

extension hh_string_t {
    /// An hh_string_t borrowing `bytes` (valid only while they are).
    public init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.init(data: UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self), length: bytes.count)
    }
}
