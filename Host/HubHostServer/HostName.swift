import Foundation

/// A host name in the one form the Host guard (RequestGuardMiddleware) compares: lowercased, and
/// an IPv6 literal without its brackets, in its canonical text. A Host header always brackets an
/// IPv6 literal (`[::1]:8420`), while plugins.yaml may write it either way (`host: "::1"`,
/// `allowed_hosts: "[::1]"`), and a browser writes an address in its own canonical form
/// (`::ffff:127.0.0.1` as `[::ffff:7f00:1]`): compared as written, the server would refuse its
/// own address.
enum HostName {
    /// A configured name (server.host, an entry of server.allowed_hosts) in comparable form.
    static func comparable(_ host: String) -> String {
        let name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]"), let literal = canonicalIPv6(name.dropFirst().dropLast()) { return literal }
        return canonicalIPv6(Substring(name)) ?? name
    }

    /// The host of a request's authority (`name`, `name:port`, `[v6]`, `[v6]:port`) in comparable
    /// form; nil when the authority is not one of those (an empty one, a port that is not a
    /// number, text after the brackets, brackets around something that is not an IPv6 address),
    /// so that nothing malformed can pass for an allowed name.
    static func of(authority: String) -> String? {
        // Every request passes here: bytes are scanned, not Characters (and no Foundation
        // `contains`, which bridges to NSString).
        let text = authority.lowercased()
        let bytes = text.utf8
        let colonByte = UInt8(ascii: ":")
        if bytes.first == UInt8(ascii: "[") {
            guard let close = text.firstIndex(of: "]"), isPort(text[text.index(after: close)...]) else { return nil }
            return canonicalIPv6(text[text.index(after: text.startIndex)..<close])
        }
        guard let colon = bytes.firstIndex(of: colonByte) else { return text.isEmpty ? nil : text }
        let rest = bytes[bytes.index(after: colon)...]
        // More than one colon without brackets: only an IPv6 literal alone (no port) is read.
        if rest.contains(colonByte) { return canonicalIPv6(Substring(text)) }
        guard colon != bytes.startIndex, isPort(text[colon...]) else { return nil }
        return String(text[..<colon])
    }

    /// `` (no port) or `:` followed by ASCII digits only, as after an authority's host.
    private static func isPort(_ text: Substring) -> Bool {
        let bytes = text.utf8
        guard let first = bytes.first else { return true }
        return first == UInt8(ascii: ":") && bytes.dropFirst().allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The canonical text of an IPv6 address (inet_ntop of what inet_pton read); nil when `text`
    /// is not one.
    private static func canonicalIPv6(_ text: Substring) -> String? {
        guard text.utf8.contains(UInt8(ascii: ":")) else { return nil }
        var address = in6_addr()
        guard inet_pton(AF_INET6, String(text), &address) == 1 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
