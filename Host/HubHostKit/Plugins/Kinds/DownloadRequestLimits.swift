import Foundation

/// What the host accepts from a `download_request` plugin, as hubhost_download_request.h lists it:
/// an http(s) URL with a host, header names of HTTP token characters, values without CR/LF/NUL,
/// bounded sizes. A request that passes cannot smuggle a header or a second request into the
/// download, nor make the host hold unbounded text.
package enum DownloadRequestLimits {
    package static let maxURLBytes = 8192
    package static let maxHeaderNameBytes = 256
    package static let maxHeaderValueBytes = 8192
    package static let maxHeaders = 100
    package static let maxHeaderBytes = 65536
    /// Editor calls per convert, so a looping plugin cannot grow the host's memory without end.
    package static let maxEdits = 1000

    /// Throws the first problem of `request`, naming the field.
    static func check(_ request: DownloadRequest) throws(DownloadRequestProblem) {
        let url = request.url
        guard url.utf8.count <= maxURLBytes else { throw .init("the URL is \(url.utf8.count) bytes; at most \(maxURLBytes)") }
        guard !url.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            throw .init("the URL \(quoted(url)) holds a space or a control character")
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else {
            throw .init("\(quoted(url)) is not an absolute http:// or https:// URL with a host")
        }
        guard request.headers.count <= maxHeaders else { throw .init("\(request.headers.count) headers; at most \(maxHeaders)") }
        var total = 0
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) {
            guard (1...maxHeaderNameBytes).contains(name.utf8.count), name.utf8.allSatisfy(isTokenByte) else {
                throw .init("header name \(quoted(name)) is not 1 to \(maxHeaderNameBytes) bytes of HTTP token characters")
            }
            guard value.utf8.count <= maxHeaderValueBytes else {
                throw .init("header '\(name)' has a value of \(value.utf8.count) bytes; at most \(maxHeaderValueBytes)")
            }
            guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
                throw .init("header '\(name)' has a value holding CR, LF or NUL")
            }
            total += name.utf8.count + value.utf8.count
        }
        guard total <= maxHeaderBytes else { throw .init("the headers are \(total) bytes; at most \(maxHeaderBytes)") }
    }

    /// RFC 9110 token characters: letters, digits and !#$%&'*+-.^_`|~.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
        default: return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// A value shown in a message: its first 80 characters, quoted.
    static func quoted(_ text: String) -> String {
        let shown = text.count > 80 ? String(text.prefix(80)) + "..." : text
        return "'\(shown.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined())'"
    }
}

/// Why the host refuses a converted download request.
struct DownloadRequestProblem: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
