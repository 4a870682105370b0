import Foundation

/// Why an XMLAPI call did not succeed, in the Engage SDK's two classes: an API fault (SUCCESS=false in a
/// 2xx answer: the request was understood and refused; never retried) and a service failure (HTTP
/// 400 or more, no answer, an answer that is not XMLAPI, no access token).
public enum XMLAPIError: Error, CustomStringConvertible, Sendable {
    /// SUCCESS=false in a 2xx answer, with the fault's errorid (e.g. 128: no such recipient) and text.
    case fault(operation: String, errorID: Int?, faultString: String)
    /// HTTP 400 or more (after the retries a 5xx gets, and the one token refresh a 401 gets).
    case http(operation: String, status: Int)
    /// No answer (refused, timed out, reset), after the retries.
    case unreachable(operation: String, reason: String)
    /// A 2xx answer that is not an XMLAPI envelope.
    case malformed(operation: String, reason: String)
    /// No access token could be had from the OAuth 2 token endpoint.
    case noToken(reason: String)
    /// identity.host is not set: nowhere to post.
    case notConfigured(String)

    /// The errorid of a fault (e.g. 128: no recipient matched); nil for a fault without one and for every service failure.
    public var errorID: Int? { if case .fault(_, let id, _) = self { return id } else { return nil } }

    /// True when the service may have carried the request out though no success was read: no
    /// answer (a lost or late answer), a 5xx, or a 2xx that could not be read. A request that is not
    /// idempotent is looked up before it is sent again.
    public var mayHaveBeenApplied: Bool {
        switch self {
        case .unreachable, .malformed: return true
        case .http(_, let status): return status >= 500
        case .fault, .noToken, .notConfigured: return false
        }
    }

    public var description: String {
        switch self {
        case .fault(let operation, let id, let text):
            return "\(operation): the XMLAPI answered a fault\(id.map { " (errorid \($0))" } ?? ""): \(text.isEmpty ? "no FaultString" : text)"
        case .http(let operation, let status): return "\(operation): the XMLAPI service answered HTTP \(status)"
        case .unreachable(let operation, let reason): return "\(operation): the XMLAPI service did not answer: \(reason)"
        case .malformed(let operation, let reason): return "\(operation): \(reason)"
        case .noToken(let reason): return "no XMLAPI access token: \(reason)"
        case .notConfigured(let what): return what
        }
    }
}
