import Foundation
import Yams

/// `server:` in plugins.yaml: where `hubhost serve` listens and who may talk to it. Loopback by
/// default; any other address needs a bearer token (auth_token_env or auth_token_file), or serve
/// refuses to start.
package struct ServerSettings: Codable, Equatable, Sendable {
    package static let schema = ConfigSchema(keys: [
        ConfigKey(
            key: "host", type: .string, defaultValue: .string("127.0.0.1"),
            doc: "The address to listen on. Not a loopback address: a bearer token is required."),
        ConfigKey(key: "port", type: .int, defaultValue: .int(8420), doc: "The port (0: any free port).", range: .between(0, 65535)),
        ConfigKey(
            key: "allowed_hosts", type: .string, defaultValue: .string(""),
            doc: "Host header names accepted besides localhost, 127.0.0.1, [::1] and `host` (comma-separated): others get 421 (DNS rebinding)."),
        ConfigKey(
            key: "allowed_origins", type: .string, defaultValue: .string(""),
            doc: "Web origins (scheme://host:port, comma-separated) that may send state-changing requests besides the server's own."),
        ConfigKey(
            key: "auth_token_env", type: .string, defaultValue: .string(""),
            doc: "An environment variable holding the bearer token every /v1 request must send (Authorization: Bearer ...)."),
        ConfigKey(
            key: "auth_token_file", type: .string, defaultValue: .string(""),
            doc: "A file holding the bearer token (first line), as an alternative to auth_token_env."),
        ConfigKey(
            key: "tls_certificate", type: .string, defaultValue: .string(""),
            doc: "A PEM certificate chain: with tls_key, serve speaks HTTPS (relative to plugins.yaml)."),
        ConfigKey(
            key: "tls_key", type: .string, defaultValue: .string(""),
            doc: "The PEM private key of tls_certificate."),
        ConfigKey(
            key: "idle_timeout", type: .duration, defaultValue: .double(30),
            doc: "A connection that sends nothing for this long (also while sending a request's head) is closed.",
            range: .atLeast(0.1)),
        ConfigKey(
            key: "max_connections", type: .int, defaultValue: .int(512),
            doc: "Open connections at most; a connection beyond it waits until another closes.", range: .between(1, 1_000_000)),
        ConfigKey(
            key: "max_body_size", type: .int, defaultValue: .int(Int64(defaultMaxBodySize)),
            doc: "The largest request body in bytes; a larger one is answered 413.", range: .between(1_024, Double(1 << 30)))
    ])

    package var host = "127.0.0.1"
    /// 0 picks a free port.
    package var port = 8420
    package var allowedHosts: [String] = []
    package var allowedOrigins: [String] = []
    package var authTokenEnv: String?
    package var authTokenFile: String?
    package var tlsCertificate: String?
    package var tlsKey: String?
    package var idleTimeout: Double = 30
    package var maxConnections = 512
    package var maxBodySize = ServerSettings.defaultMaxBodySize
    /// The default largest request body: 16 MiB.
    package static let defaultMaxBodySize = 16 << 20

    package init() {}

    /// The plugins.yaml line each key was given on (absent: the default).
    package var lines: [String: Int] = [:]

    /// The settings from the resolved `server:` section; `report(key, message)` hears out-of-range values.
    init(values: [String: PluginValue], relativeTo folder: String, report: (String, String) -> Void) {
        func list(_ key: String) -> [String] {
            guard case .string(let text)? = values[key] else { return [] }
            return text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        }
        func text(_ key: String) -> String? {
            guard case .string(let text)? = values[key], !text.isEmpty else { return nil }
            return text
        }
        if let host = text("host") { self.host = host }
        // Ranges were checked against the schema: a refused value arrives here as the default.
        if case .int(let port)? = values["port"] { self.port = Int(port) }
        allowedHosts = list("allowed_hosts")
        allowedOrigins = list("allowed_origins")
        authTokenEnv = text("auth_token_env")
        authTokenFile = text("auth_token_file").map { $0.hasPrefix("/") ? $0 : (folder as NSString).appendingPathComponent($0) }
        func path(_ key: String) -> String? { text(key).map { $0.hasPrefix("/") ? $0 : (folder as NSString).appendingPathComponent($0) } }
        tlsCertificate = path("tls_certificate")
        tlsKey = path("tls_key")
        if (tlsCertificate == nil) != (tlsKey == nil) {
            report(tlsCertificate == nil ? "server.tls_certificate" : "server.tls_key", "TLS needs both server.tls_certificate and server.tls_key")
            tlsCertificate = nil
            tlsKey = nil
        }
        if case .double(let seconds)? = values["idle_timeout"] { idleTimeout = seconds }
        if case .int(let count)? = values["max_connections"] { maxConnections = Int(count) }
        if case .int(let size)? = values["max_body_size"] { maxBodySize = Int(size) }
    }

    /// True when serve speaks HTTPS (both TLS paths are set).
    package var usesTLS: Bool { tlsCertificate != nil && tlsKey != nil }

    /// True for addresses only this machine can reach.
    package var isLoopback: Bool { Self.isLoopback(host) }

    /// Whether `host` is an address only this machine can reach: `localhost`, an IPv4 address in
    /// 127.0.0.0/8, `::1` or `::ffff:127.x.x.x` (brackets allowed). Parsed as an address, so a DNS
    /// name that merely starts with "127." (`127.attacker.example`) is not loopback.
    static func isLoopback(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, name, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return true }  // ::1
        let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
        return mapped && bytes[12] == 127  // ::ffff:127.x.x.x
    }

    /// The bearer token, read from the environment variable or the file; nil when none is
    /// configured. Throws when one is configured but cannot be read or is empty.
    package func authToken(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String? {
        if let name = authTokenEnv {
            guard let token = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
                throw ServerSettingsError(description: "server.auth_token_env names \(name), which is not set or empty")
            }
            return token
        }
        if let path = authTokenFile {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                let token = text.split(separator: "\n").first?.trimmingCharacters(in: .whitespaces), !token.isEmpty
            else {
                throw ServerSettingsError(description: "server.auth_token_file \(path) cannot be read or holds no token")
            }
            return token
        }
        return nil
    }

    /// Checks that serving is safe as configured: a non-loopback address needs a token.
    package func checkSafeToServe(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let token = try authToken(environment: environment)
        if !isLoopback, token == nil {
            throw ServerSettingsError(
                description:
                    "server.host \(host) is not a loopback address: other machines could reach the API, so set server.auth_token_env or server.auth_token_file (a bearer token every request must send), or listen on 127.0.0.1"
            )
        }
    }
}

extension ServerSettings: ManifestSection {
    package static let sectionName = "server"
    package static let summary = "Where `hubhost serve` listens and who may talk to it: loopback by default; any other address needs a bearer token."

    package init(section node: Node, context: ManifestSectionContext) {
        var lines: [String: Int] = [:]
        let values = context.resolve(node, schema: Self.schema, lines: &lines)
        self.init(values: values, relativeTo: context.folder) { key, message in
            context.report(node.mapping?[String(key.dropFirst("server.".count))], key: key, message)
        }
        self.lines = lines
    }

    package var effectiveValues: [EffectiveSetting] {
        let values: [String: PluginValue] = [
            "host": .string(host), "port": .int(Int64(port)), "allowed_hosts": .string(allowedHosts.joined(separator: ", ")),
            "allowed_origins": .string(allowedOrigins.joined(separator: ", ")), "auth_token_env": .string(authTokenEnv ?? ""),
            "auth_token_file": .string(authTokenFile ?? ""), "tls_certificate": .string(tlsCertificate ?? ""),
            "tls_key": .string(tlsKey ?? ""), "idle_timeout": .double(idleTimeout),
            "max_connections": .int(Int64(maxConnections)), "max_body_size": .int(Int64(maxBodySize))
        ]
        return Self.schema.effective(values, lines: lines, section: Self.sectionName)
    }
}

package struct ServerSettingsError: Error, CustomStringConvertible {
    package var description: String
    package init(description: String) { self.description = description }
}
