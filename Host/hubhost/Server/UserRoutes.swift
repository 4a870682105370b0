import Foundation
import HubHostKit
import Hummingbird

/// The HTTP API for Content Hub users, presenting and local notifications: a thin front end over
/// HubEngine (`hub.users`, `hub.present`, `hub.localNotifications`), like the CLI.
///
///   GET  /v1/users                               the users, oldest first
///   POST /v1/users                               {"id"?: "...", "tags"?: ["a"]}: create; 201 {"id", "tagCounts"}
///   POST /v1/users/generate-id                   {"id": "<new anonymous id>"} (nothing is created)
///   POST /v1/users/{id}/activate                 make it the active user
///   GET  /v1/users/active                        {"active": id or null}
///   GET  /v1/users/{id}/tags                     ["a", "b"]
///   GET  /v1/users/{id}/tag-counts               {"a": 2}
///   POST /v1/users/active/tag-counts             {"tag": delta, ...} added to the active user's counts; the counts after
///   GET  /v1/hub/present?tags=a,b&uri=U&entry_point=E   the presentation (tracks "Hub Presented")
///   GET  /v1/local-notifications/due             the due, unhandled notifications
///   POST /v1/local-notifications/{id}/handle     {"show_alert": bool}: {"id", "ours": true, "uri", "showAlert", "message"}; {"ours": false} when hubhost did not schedule it
///
/// Errors: 400 bad input, 404 unknown user / no active user / nothing to present / `hub: enabled:
/// false`, 403 hub disabled by the content service or not part of the pilot program, 409 a user
/// that exists; always as {"error": "..."}.
enum UserRoutes {
    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        router.get("/v1/users") { _, _ in
            try await withHub(host) { HTTPAPI.json(try $0.users.list()) }
        }
        router.post("/v1/users") { request, _ in
            let data = try await HTTPAPI.body(request)
            let object: [String: Any]
            if data.isEmpty { object = [:] } else {
                guard let parsed = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    return HTTPAPI.failure(.badRequest, "expected a JSON object: {\"id\": \"...\" (optional), \"tags\": [\"...\"] (optional)}")
                }
                object = parsed
            }
            if object["id"] != nil, !(object["id"] is String) { return HTTPAPI.failure(.badRequest, "\"id\" must be a string") }
            if object["tags"] != nil, !(object["tags"] is [String]) { return HTTPAPI.failure(.badRequest, "\"tags\" must be a list of strings") }
            let id = object["id"] as? String, tags = object["tags"] as? [String] ?? []
            return try await withHub(host) { hub in
                let created = try hub.users.createUser(id: id, tags: tags)
                return HTTPAPI.json(CreatedUser(id: created, tagCounts: try hub.users.tagCounts(of: created)), status: .created)
            }
        }
        router.post("/v1/users/generate-id") { _, _ in
            try await withHub(host) { HTTPAPI.json(["id": $0.users.generateID()]) }
        }
        router.get("/v1/users/active") { _, _ in
            try await withHub(host) { HTTPAPI.json(["active": $0.users.activeUser()]) }
        }
        router.post("/v1/users/active/tag-counts") { request, _ in
            let data = try await HTTPAPI.body(request)
            // JSONDecoder refuses fractions, booleans and strings where JSONSerialization would bridge them.
            guard let deltas = try? JSONDecoder().decode([String: Int].self, from: data), !deltas.isEmpty else {
                return HTTPAPI.failure(.badRequest, "expected a JSON object of whole-number tag deltas, e.g. {\"sports\": 2, \"cooking\": -1}")
            }
            let parsed = deltas
            return try await withHub(host) { HTTPAPI.json(try $0.users.updateTagCounts(parsed)) }
        }
        router.post("/v1/users/:id/activate") { _, context in
            let id = context.parameters.get("id") ?? ""
            return try await withHub(host) { hub in
                try hub.users.activate(id)
                return HTTPAPI.json(["active": id])
            }
        }
        router.get("/v1/users/:id/tags") { _, context in
            let id = context.parameters.get("id") ?? ""
            return try await withHub(host) { HTTPAPI.json(try $0.users.tags(of: id)) }
        }
        router.get("/v1/users/:id/tag-counts") { _, context in
            let id = context.parameters.get("id") ?? ""
            return try await withHub(host) { HTTPAPI.json(try $0.users.tagCounts(of: id)) }
        }
        router.get("/v1/hub/present") { request, _ in
            let query = request.uri.queryParameters
            let tags = query.get("tags").map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
            let uri = query.get("uri").map { String($0) }
            let entryPoint = query.get("entry_point").map { String($0) }
            if tags != nil && uri != nil { return HTTPAPI.failure(.badRequest, "give tags or uri, not both") }
            return try await withHub(host) { hub in
                if let entryPoint { hub.setEntryPoint(entryPoint) }
                return HTTPAPI.json(try hub.present(tags: tags, uri: uri))
            }
        }
        router.get("/v1/local-notifications/due") { _, _ in
            try await withHub(host) { HTTPAPI.json(try $0.localNotifications.due()) }
        }
        router.post("/v1/local-notifications/:id/handle") { request, context in
            let id = context.parameters.get("id") ?? ""
            let data = try await HTTPAPI.body(request)
            var showAlert = true
            if !data.isEmpty {
                guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    return HTTPAPI.failure(.badRequest, "expected a JSON object: {\"show_alert\": true|false}")
                }
                if let value = object["show_alert"] {
                    guard let flag = value as? Bool else { return HTTPAPI.failure(.badRequest, "\"show_alert\" must be true or false") }
                    showAlert = flag
                }
            }
            let alert = showAlert
            return try await withHub(host) { hub in
                HTTPAPI.json(LocalNotificationsCommand.OutcomeView(try hub.localNotifications.handle(id: id, showAlert: alert)))
            }
        }
    }

    /// The hub engine, or the error response that says why there is none.
    static func hubEngine(_ host: HubHost) -> Result<HubEngine, ResponseError> {
        do {
            guard let hub = try host.hub() else { return .failure(ResponseError(.notFound, "the Content Hub is disabled (hub: enabled: false)")) }
            return .success(hub)
        } catch {
            return .failure(ResponseError(.internalServerError, "cannot open the Content Hub: \(error)"))
        }
    }

    /// Runs `work` off the event loop with the hub; maps user and present errors to responses.
    static func withHub(_ host: HubHost, _ work: @escaping @Sendable (HubEngine) throws -> Response) async throws -> Response {
        let hub: HubEngine
        switch hubEngine(host) {
        case .success(let engine): hub = engine
        case .failure(let error): return HTTPAPI.failure(error.status, error.message)
        }
        return try await HTTPAPI.blocking {
            do { return try work(hub) } catch let error as UserStore.UserError {
                switch error {
                case .exists: return HTTPAPI.failure(.conflict, error.description)
                case .unknown, .noActiveUser: return HTTPAPI.failure(.notFound, error.description)
                case .invalidID, .invalidTag: return HTTPAPI.failure(.badRequest, error.description)
                }
            } catch let error as HubEngine.PresentError {
                switch error {
                case .notFound, .noContent: return HTTPAPI.failure(.notFound, error.description)
                case .disabled, .notPartOfPilotProgram: return HTTPAPI.failure(.forbidden, error.description)
                }
            }
        }
    }

    struct ResponseError: Error {
        var status: HTTPResponse.Status
        var message: String
        init(_ status: HTTPResponse.Status, _ message: String) { self.status = status; self.message = message }
    }

    struct CreatedUser: Encodable {
        var id: String
        var tagCounts: [String: Int]
    }
}
