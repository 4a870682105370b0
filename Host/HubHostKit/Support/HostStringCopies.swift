import HubHostABI

/// C copies of strings the host lends a plugin for one call (an event view, a download request):
/// each `copy` allocates, and every copy stays valid until `release`, even when the Swift value
/// it came from changes meanwhile. Not thread-safe: its owner serializes use.
final class HostStringCopies {
    private var buffers: [UnsafeMutableRawBufferPointer] = []

    func copy(_ text: String) -> hh_string_t {
        var text = text
        return text.withUTF8 { bytes in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
            buffer.copyMemory(from: UnsafeRawBufferPointer(bytes))
            buffers.append(buffer)
            return hh_string_t(data: buffer.baseAddress!.assumingMemoryBound(to: CChar.self), length: bytes.count)
        }
    }

    /// Frees every copy; the strings handed out are invalid afterwards.
    func release() {
        for buffer in buffers { buffer.deallocate() }
        buffers = []
    }

    deinit { release() }
}
