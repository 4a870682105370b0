import Foundation
import HubHostABI

/// The host side of one convert call: C copies of the request for the plugin to read, and the edits
/// it makes through the editor. The copies live until `release` (after the call returns).
final class DownloadRequestEditSession {
    private let original: DownloadRequest
    private var url: String
    /// Names as last spelled, keyed by their lowercased form (header names compare without case).
    private var headers: [String: (name: String, value: String)]
    private var edits = 0
    /// The first edit the host could not take (not UTF-8, too many edits); reported after the call.
    private var problem: String?
    private let copies = HostStringCopies()

    init(_ request: DownloadRequest) {
        original = request
        url = request.url
        headers = [:]
        for (name, value) in request.headers { headers[name.lowercased()] = (name, value) }
    }

    func release() {
        copies.release()
    }

    private func copy(_ text: String) -> hh_string_t { copies.copy(text) }

    /// Calls `body` with the request (headers sorted by name) and the editor.
    func withRequest(_ body: (UnsafePointer<hh_download_request_t>, UnsafePointer<hh_download_request_editor_t>) -> hh_status_t) -> hh_status_t {
        // From the table keyed by lowercased name, before any edit: unique names, as the header promises.
        let cHeaders = headers.sorted { $0.key < $1.key }
            .map { hh_http_header_t(name: copy($0.value.name), value: copy($0.value.value)) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        var editor = hh_download_request_editor_t(
            editor_data: me,
            set_url: { data, url in DownloadRequestEditSession.from(data).setURL(url) },
            set_header: { data, name, value in DownloadRequestEditSession.from(data).setHeader(name, value) },
            remove_header: { data, name in DownloadRequestEditSession.from(data).removeHeader(name) })
        return cHeaders.withUnsafeBufferPointer { headerBuffer in
            var request = hh_download_request_t(
                url: copy(original.url), headers: headerBuffer.baseAddress, header_count: headerBuffer.count,
                item_id: copy(original.itemId), file_role: copy(original.fileRole))
            return withExtendedLifetime(self) { body(&request, &editor) }
        }
    }

    static func from(_ data: UnsafeMutableRawPointer?) -> DownloadRequestEditSession {
        Unmanaged<DownloadRequestEditSession>.fromOpaque(data!).takeUnretainedValue()
    }

    /// Counts an edit and decodes its strings strictly; nil (and a problem kept) when the host
    /// cannot take it.
    private func accept(_ call: String, _ strings: hh_string_t...) -> [String]? {
        guard problem == nil else { return nil }
        edits += 1
        guard edits <= DownloadRequestLimits.maxEdits else {
            problem = "more than \(DownloadRequestLimits.maxEdits) editor calls"
            return nil
        }
        var texts: [String] = []
        for s in strings {
            // Longer than any accepted field: refused before its bytes are copied.
            guard s.length <= DownloadRequestLimits.maxHeaderBytes else {
                problem = "\(call) was given \(s.length) bytes"
                return nil
            }
            guard let text = validUTF8(s) else {
                problem = "\(call) was given bytes that are not UTF-8"
                return nil
            }
            texts.append(text)
        }
        return texts
    }

    private func setURL(_ value: hh_string_t) {
        guard let texts = accept("set_url", value) else { return }
        url = texts[0]
    }

    private func setHeader(_ name: hh_string_t, _ value: hh_string_t) {
        guard let texts = accept("set_header", name, value) else { return }
        headers[texts[0].lowercased()] = (texts[0], texts[1])
    }

    private func removeHeader(_ name: hh_string_t) {
        guard let texts = accept("remove_header", name) else { return }
        headers[texts[0].lowercased()] = nil
    }

    /// The request after the edits, checked against `DownloadRequestLimits`.
    func result() throws(DownloadRequestProblem) -> DownloadRequest {
        if let problem { throw DownloadRequestProblem(problem) }
        var converted = original
        converted.url = url
        converted.headers = Dictionary(headers.values.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
        try DownloadRequestLimits.check(converted)
        return converted
    }
}
