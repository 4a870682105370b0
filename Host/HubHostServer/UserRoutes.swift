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
/// Errors (APIError): 400 bad input, 404 unknown user / no active user / nothing to present / `hub:
/// enabled: false`, 403 hub disabled by the content service or not part of the pilot program, 409 a
/// user that exists.
enum UserRoutes {
    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        let users = router.group("/v1/users")
        let localNotifications = router.group("/v1/local-notifications")
        users.get("") { _, _ in
            try await withHub(host) { HTTPAPI.json(try $0.users.list()) }
        }
        users.post("") { request, _ in
            struct NewUser: Decodable {
                var id: String?
                var tags: [String]?
            }
            let user = try await HTTPAPI.decode(NewUser.self, from: request, empty: NewUser())
            return try await withHub(host) { hub in
                let created = try hub.users.createUser(id: user.id, tags: user.tags ?? [])
                return HTTPAPI.json(CreatedUser(id: created, tagCounts: try hub.users.tagCounts(of: created)), status: .created)
            }
        }
        users.post("/generate-id") { _, _ in
            try await withHub(host) { HTTPAPI.json(["id": $0.users.generateID()]) }
        }
        users.get("/active") { _, _ in
            try await withHub(host) { HTTPAPI.json(["active": $0.users.activeUser()]) }
        }
        users.post("/active/tag-counts") { request, _ in
            // Decoded as whole numbers: fractions, booleans and strings are refused with the field named.
            let deltas = try await HTTPAPI.decode([String: Int].self, from: request)
            guard !deltas.isEmpty else {
                throw APIError(.badRequest, "expected a JSON object of whole-number tag deltas, e.g. {\"sports\": 2, \"cooking\": -1}")
            }
            return try await withHub(host) { HTTPAPI.json(try $0.users.updateTagCounts(deltas)) }
        }
        users.post("/:id/activate") { _, context in
            let id = context.parameters.get("id") ?? ""
            return try await withHub(host) { hub in
                // Page views answered before the switch are recorded first: they teach the user
                // who read them (the recorder resolves the active user when it records).
                hub.viewRecorder.waitUntilDrained()
                try hub.users.activate(id)
                return HTTPAPI.json(["active": id])
            }
        }
        users.get("/:id/tags") { _, context in
            let id = context.parameters.get("id") ?? ""
            return try await withHub(host) { HTTPAPI.json(try $0.users.tags(of: id)) }
        }
        users.get("/:id/tag-counts") { _, context in
            let id = context.parameters.get("id") ?? ""
            return try await withHub(host) { HTTPAPI.json(try $0.users.tagCounts(of: id)) }
        }
        router.get("/v1/hub/present") { request, _ in
            let query = request.uri.queryParameters
            let tags = HTTPAPI.tags(request)
            let uri = query.get("uri").map { String($0) }
            let entryPoint = query.get("entry_point").map { String($0) }
            if tags != nil && uri != nil { throw APIError(.badRequest, "give tags or uri, not both") }
            return try await withHub(host) { hub in
                if let entryPoint { hub.setEntryPoint(entryPoint) }
                return HTTPAPI.json(try hub.present(tags: tags, uri: uri))
            }
        }
        localNotifications.get("/due") { _, _ in
            try await withHub(host) { HTTPAPI.json(try $0.localNotifications.due()) }
        }
        localNotifications.post("/:id/handle") { request, context in
            let id = context.parameters.get("id") ?? ""
            struct Handle: Decodable { var show_alert: Bool? }
            let alert = try await HTTPAPI.decode(Handle.self, from: request, empty: Handle()).show_alert ?? true
            return try await withHub(host) { hub in
                HTTPAPI.json(LocalNotificationOutcomeView(try hub.localNotifications.handle(id: id, showAlert: alert)))
            }
        }
    }

    /// Runs `work` on the BlockingPool with the hub engine; 404 (code `disabled`) when the hub is
    /// off. Engine errors (unknown user, nothing to present...) become APIErrors in APIErrorMiddleware.
    static func withHub(_ host: HubHost, _ work: @escaping @Sendable (HubEngine) throws -> Response) async throws -> Response {
        try await HTTPAPI.blocking {
            guard let hub = try host.hub() else { throw APIError.engineOff("the Content Hub is disabled (hub: enabled: false)") }
            return try work(hub)
        }
    }

    struct CreatedUser: Encodable {
        var id: String
        var tagCounts: [String: Int]
    }
}
