import HubHostABI

// Text a plugin hands the host as an hh_string_t (a pointer and a byte count, no NUL), read one of
// two ways, here and nowhere else:
// - strictly (`validUTF8`) where the host keeps the text: an attribute an augmentation sets is
//   refused unless it is valid UTF-8, so nothing a plugin writes can poison the store;
// - lossily (`lossyUTF8`) where the text is only shown or looked up (log messages, error reports,
//   HTTP requests, names to find): invalid bytes become U+FFFD.

/// The bytes of `s`; nil when it has none (no data, or length 0).
private func bytes(of s: hh_string_t) -> UnsafeBufferPointer<UInt8>? {
    guard let data = s.data, s.length > 0 else { return nil }
    return UnsafeBufferPointer(start: UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: s.length)
}

/// The text of an hh_string_t when it is valid UTF-8; nil otherwise (also for a length without data).
func validUTF8(_ s: hh_string_t) -> String? {
    guard let bytes = bytes(of: s) else { return s.length == 0 ? "" : nil }
    // ASCII (most attribute names and values) is valid UTF-8 as it is: skip the general validator,
    // which cost about 1,000 instructions per call on the augmentation path.
    if !bytes.contains(where: { $0 >= 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
    return String(validating: bytes, as: UTF8.self)
}

/// The text of an hh_string_t; invalid UTF-8 becomes U+FFFD, no bytes the empty string.
func lossyUTF8(_ s: hh_string_t) -> String {
    guard let bytes = bytes(of: s) else { return "" }
    return String(decoding: bytes, as: UTF8.self)
}
