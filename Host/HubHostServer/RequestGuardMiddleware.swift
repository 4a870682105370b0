import Foundation
import HubHostKit
import Hummingbird

/// The local API's gate, before any route runs:
/// - Host: only the names the server is configured for (loopback names, server.host,
///   server.allowed_hosts), compared as HostName (an IPv6 literal with or without brackets); any
///   other, or a malformed one, answers 421, so a DNS-rebinding page that points its own name at
///   127.0.0.1 reads nothing.
/// - Origin: a state-changing request (POST, PUT, PATCH, DELETE) that carries an Origin must come
///   from the server's own origin or one in server.allowed_origins; a page on another site gets
///   403, whatever its content type ("simple" cross-site requests included).
/// - Content type: a state-changing /v1 request with a body must say application/json (415):
///   browsers cannot send that cross-site without a CORS preflight, which this server never grants.
/// - Bearer token: when one is configured, every /v1 request but /v1/health, and /metrics, must
///   send `Authorization: Bearer <token>`, compared in constant time (401).
/// - Body size: a Content-Length above server.max_body_size answers 413 before it is read (a
///   body without one, chunked, is refused as it is read: HTTPAPI.body).
struct RequestGuardMiddleware<Context: RequestContext>: RouterMiddleware {
    let allowedHosts: Set<String>
    let allowedOrigins: Set<String>
    let token: [UInt8]?
    let maxBodySize: Int

    init(settings: ServerSettings, token: String?) {
        let configured = ["localhost", "127.0.0.1", "::1", settings.host] + settings.allowedHosts
        allowedHosts = Set(configured.map(HostName.comparable))
        allowedOrigins = Set(settings.allowedOrigins)
        self.token = token.map { Array($0.utf8) }
        maxBodySize = settings.maxBodySize
    }

    /// POST, PUT, PATCH and DELETE (a switch, not a set built for each request).
    static func isStateChanging(_ method: HTTPRequest.Method) -> Bool {
        switch method {
        case .post, .put, .patch, .delete: return true
        default: return false
        }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let authority = request.head.authority ?? ""
        guard let host = HostName.of(authority: authority), allowedHosts.contains(host) else {
            throw APIError(.misdirectedRequest, "the Host '\(authority.lowercased())' is not one this server answers for (server.allowed_hosts)")
        }
        let path = request.uri.path
        let headers = GuardedHeaders(request.headers)
        let length = headers.contentLength.flatMap { Int($0) }
        if Self.isStateChanging(request.method) {
            if let origin = headers.origin?.lowercased(), !Self.isOwnOrigin(origin, authority: authority), !allowedOrigins.contains(origin) {
                throw APIError(.forbidden, "requests from the web origin \(origin) are not allowed (server.allowed_origins)", code: "foreign_origin")
            }
            let hasBody = (length ?? 0) > 0 || headers.transferEncoding != nil
            if path.hasPrefix("/v1/"), hasBody {
                let type = headers.contentType?.lowercased() ?? ""
                guard type == "application/json" || type.hasPrefix("application/json;") else {
                    throw APIError(.unsupportedMediaType, "a request body must be application/json, not '\(type.isEmpty ? "none" : type)'")
                }
            }
        }
        if let length, length > maxBodySize {
            throw APIError.bodyTooLarge(declared: length, limit: maxBodySize)
        }
        if let token, (path.hasPrefix("/v1/") && path != "/v1/health") || path == "/metrics" {
            guard let given = headers.authorization, given.hasPrefix("Bearer "),
                Self.constantTimeEqual(Array(given.utf8.dropFirst(7)), token)
            else {
                var error = APIError(.unauthorized, "send Authorization: Bearer <the token of server.auth_token_env or server.auth_token_file>")
                error.headers[.wwwAuthenticate] = "Bearer"
                throw error
            }
        }
        return try await HTTPAPI.$maxBodySize.withValue(maxBodySize) { try await next(request, context) }
    }

    /// The header fields the guard reads, found in one pass over the request's fields, each as
    /// `HTTPFields`' subscript gives it (the values of a repeated field joined by ", "). That
    /// subscript makes a lazy map and a join for each field present, several thousand
    /// instructions per request, more than the rest of the guard.
    struct GuardedHeaders {
        var contentLength: String?
        var origin: String?
        var transferEncoding: String?
        var contentType: String?
        var authorization: String?

        init(_ fields: HTTPFields) {
            // Appended in place: a request repeating one field thousands of times costs time in
            // proportion to its size, not to its square.
            func add(_ value: String, to slot: inout String?) {
                if slot == nil {
                    slot = value
                } else {
                    slot!.append(", ")
                    slot!.append(value)
                }
            }
            for field in fields {
                switch field.name {
                case .contentLength: add(field.value, to: &contentLength)
                case .origin: add(field.value, to: &origin)
                case .transferEncoding: add(field.value, to: &transferEncoding)
                case .contentType: add(field.value, to: &contentType)
                case .authorization: add(field.value, to: &authorization)
                default: continue
                }
            }
        }
    }

    /// Whether a (lowercased) Origin is `http://` or `https://` followed by the request's own
    /// authority, compared without regard to case.
    static func isOwnOrigin(_ origin: String, authority: String) -> Bool {
        for scheme in ["http://", "https://"] where origin.hasPrefix(scheme) {
            return origin.utf8.dropFirst(scheme.utf8.count).elementsEqual(authority.lowercased().utf8)
        }
        return false
    }

    /// Compares without an early exit, so the time taken does not tell how much of a guess matched.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) {
            difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return difference == 0
    }
}
