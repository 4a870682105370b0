import Foundation
import HubHostKit
import Hummingbird

/// Every error the HTTP API answers, in one shape: `{"error": {"code": "...", "message": "..."}}`.
/// Routes throw it (or an engine error that `APIError.init(_ error:)` maps); APIErrorMiddleware
/// turns whatever else is thrown, Hummingbird's own errors included, into it.
struct APIError: HTTPResponseError, CustomStringConvertible {
    var status: HTTPResponse.Status
    /// A machine-readable code, e.g. `bad_request`, `duplicate_id`, `payload_too_large`.
    var code: String
    var message: String
    var headers: HTTPFields = [:]

    init(_ status: HTTPResponse.Status, _ message: String, code: String? = nil) {
        self.status = status
        self.message = message
        self.code = code ?? Self.code(for: status)
    }

    var description: String { "\(status.code) \(code): \(message)" }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = HTTPAPI.json(APIErrorBody(error: .init(code: code, message: message)), status: status)
        for field in headers { response.headers.append(field) }
        return response
    }

    static func code(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 400: return "bad_request"
        case 401: return "unauthorized"
        case 403: return "forbidden"
        case 404: return "not_found"
        case 405: return "method_not_allowed"
        case 409: return "conflict"
        case 413: return "payload_too_large"
        case 415: return "unsupported_media_type"
        case 421: return "misdirected_request"
        case 502: return "bad_gateway"
        case 503: return "unavailable"
        default: return status.code >= 500 ? "internal_error" : "error"
        }
    }

    /// The API's answer for an error an engine or Hummingbird threw.
    init(_ error: Error) {
        switch error {
        case let error as APIError:
            self = error
        case let error as HTTPError:
            let reason = error.body ?? error.status.reasonPhrase
            self.init(error.status, error.status == .contentTooLarge ? "the request body is larger than server.max_body_size" : reason)
        case let problem as EventInput.Problem:
            self.init(problem.tooLarge ? .contentTooLarge : .badRequest, problem.description)
        case let refusal as EventLimits.Refusal:
            self.init(refusal.tooLarge ? .contentTooLarge : .badRequest, refusal.description)
        case let invalid as Purchase.Invalid:
            self.init(.badRequest, invalid.description)
        case let duplicate as EventEngine.DuplicateEventID:
            self.init(.conflict, duplicate.description, code: "duplicate_id")
        case let error as UserStore.UserError:
            switch error {
            case .exists: self.init(.conflict, error.description)
            case .unknown, .noActiveUser: self.init(.notFound, error.description)
            case .invalidID, .invalidTag: self.init(.badRequest, error.description)
            }
        case let error as HubEngine.PresentError:
            switch error {
            case .notFound, .noContent: self.init(.notFound, error.description)
            case .disabled, .notPartOfPilotProgram: self.init(.forbidden, error.description)
            }
        case let error as ContentDelivery.SyncError:
            switch error {
            case .noProvider, .closed: self.init(.serviceUnavailable, error.description)
            case .storage: self.init(.internalServerError, error.description)
            case .fetchFailed, .timedOut, .truncated, .invalidSettings, .invalidMetadata, .rejected:
                self.init(.badGateway, error.description)
            }
        case let error as PrefetchError:
            switch error {
            case .unknownItem: self.init(.notFound, error.description)
            case .refused: self.init(.conflict, error.description)
            case .notRegistered: self.init(.conflict, error.description, code: "not_registered")
            case .service: self.init(.badGateway, error.description)
            case .invalid: self.init(.badRequest, error.description)
            }
        case let error as DecodingError:
            self.init(.badRequest, Self.describe(error))
        default:
            self.init(.internalServerError, "\(error)")
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return names.isEmpty ? "the body" : "'\(names.joined(separator: "."))'"
        }
        switch error {
        case .typeMismatch(let type, let context): return "\(path(context)) must be \(type): \(context.debugDescription)"
        case .valueNotFound(_, let context): return "\(path(context)) is required"
        case .keyNotFound(let key, _): return "'\(key.stringValue)' is required"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}

/// The one error shape: `{"error": {"code": "...", "message": "..."}}`.
struct APIErrorBody: Encodable {
    struct Detail: Encodable {
        var code: String
        var message: String
    }
    var error: Detail
}

extension APIError {
    static func engineOff(_ what: String) -> APIError { APIError(.notFound, what, code: "disabled") }

    /// A request body past server.max_body_size (413), in the same words whether its size was
    /// declared (Content-Length, refused before it is read) or found out while reading it (a
    /// chunked body, refused as its limit is crossed).
    static func bodyTooLarge(declared length: Int? = nil, limit: Int) -> APIError {
        let size = length.map { "\($0) bytes" } ?? "more than \(limit) bytes"
        return APIError(.contentTooLarge, "the request body is \(size); server.max_body_size is \(limit)")
    }
}

/// Turns every error a route throws into the API's one error shape (and logs server faults).
struct APIErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound && error.body == nil {
            throw APIError(.notFound, "no route for \(request.method) \(request.uri.path) (the API is described at /openapi.yaml)")
        } catch {
            let apiError = APIError(error)
            if apiError.status.code >= 500 {
                context.logger.error("\(request.method) \(request.uri.path): \(apiError.message)")
            }
            throw apiError
        }
    }
}
