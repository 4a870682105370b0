import Foundation
import HubHostKit
import Hummingbird

/// The HTTP API of `hubhost serve`: a thin front end over HubHostKit, like the CLI. Every route
/// answers JSON; a bad request gets 400 with `{"error": "..."}`.
///
///   GET  /v1/health                      {"status": "ok"}
///   POST /v1/events                      one event, a list, or {"events": [...]} (see EventInput); 201 with the stored events
///   GET  /v1/events?status=S&limit=N     stored events, newest first
///   GET  /v1/events/stats                counts by status
///   POST /v1/events/flush                post what is due now; the DeliveryReport
///   POST /v1/open-url                    {"url": "..."}: a deep link; the tracked event
///   POST /v1/notifications/received      a notification payload (JSON object); the tracked event
///   POST /v1/notifications/opened        same, opened
///   GET  /v1/messages/next?context=C     the next in-app message that may show (204 when none)
///   POST /v1/messages/{id}/impression    the message was shown: one impression
///   POST /v1/messages/close              {"clear_queued_campaigns": bool}: close without an impression
///   /hub..., /v1/hub/state, /v1/notifications   the web Content Hub and its notification stream (HubWebRoutes)
enum HTTPAPI {
    static func router(host: HubHost, engine: EventEngine, campaigns: CampaignEngine?) -> Router<BasicRequestContext> {
        let router = Router()
        UserRoutes.add(to: router, host: host)  // users, hub present, local notifications
        router.get("/v1/messages/next") { request, _ in
            guard let campaigns else { return failure(.notFound, "campaigns are disabled (campaigns: enabled: false)") }
            let contexts = request.uri.queryParameters.getAll("context").map { String($0) }
            guard let message = try await blocking({ campaigns.next(allowedContexts: contexts) }) else { return Response(status: .noContent) }
            return json(message)
        }
        router.post("/v1/messages/:id/impression") { _, context in
            guard let campaigns else { return failure(.notFound, "campaigns are disabled (campaigns: enabled: false)") }
            let id = context.parameters.get("id") ?? ""
            do { _ = try await blocking { try campaigns.displayed(id) } } catch { return failure(.notFound, "\(error)") }
            return json(["status": "counted"])
        }
        router.post("/v1/messages/close") { request, _ in
            guard let campaigns else { return failure(.notFound, "campaigns are disabled (campaigns: enabled: false)") }
            let data = try await body(request)
            let object = (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
            let clear = object["clear_queued_campaigns"] as? Bool ?? false
            try await blocking { campaigns.close(clearQueue: clear) }
            return json(["status": "closed"])
        }
        router.get("/v1/health") { _, _ in json(["status": "ok"]) }
        router.post("/v1/events") { request, _ in
            let data = try await body(request)
            let events: [Event]
            do { events = try EventInput.parse(data) } catch { return failure(.badRequest, "\(error)") }
            let tracked = try await blocking { try events.map { try engine.track($0) } }
            return json(tracked.map { EventView($0) }, status: .created)
        }
        router.get("/v1/events") { request, _ in
            var status: EventStatus?
            if let text = request.uri.queryParameters.get("status") {
                guard let parsed = EventStatus(rawValue: text.uppercased()) else {
                    return failure(.badRequest, "unknown status '\(text)'; expected one of: \(EventStatus.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                status = parsed
            }
            let limit = max(1, min(request.uri.queryParameters.get("limit").flatMap { Int($0) } ?? 50, 10_000))
            let filter = status
            let stored = try await blocking {
                engine.waitForBackgroundWrites()
                return try engine.store.list(status: filter, limit: limit)
            }
            return json(stored.map { EventView($0.event, lastError: $0.lastError) })
        }
        router.get("/v1/events/stats") { _, _ in
            let counts = try await blocking {
                engine.waitForBackgroundWrites()
                return try engine.store.stats()
            }
            return json(Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) }))
        }
        router.post("/v1/events/flush") { _, _ in
            json(try await blocking { engine.flush() })
        }
        router.post("/v1/open-url") { request, _ in
            let data = try await body(request)
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let url = object["url"] as? String else {
                return failure(.badRequest, "expected {\"url\": \"...\"}")
            }
            let (event, _) = try await blocking { try engine.openURL(url) }
            return json(EventView(event), status: .created)
        }
        router.post("/v1/notifications/:action") { request, context in
            let action = context.parameters.get("action") ?? ""
            guard action == "received" || action == "opened" else { return failure(.notFound, "use /v1/notifications/received or /opened") }
            let data = try await body(request)
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                return failure(.badRequest, "expected a JSON object (the notification payload)")
            }
            let payload = object.mapValues { "\($0)" }
            let event = try await blocking { try engine.notification(opened: action == "opened", payload: payload) }
            return json(EventView(event), status: .created)
        }
        HubWebRoutes.add(to: router, host: host, engine: engine)
        HubDeliveryRoutes.add(to: router, host: host)
        return router
    }

    static func body(_ request: Request) async throws -> Data {
        var request = request
        let buffer = try await request.collectBody(upTo: 16 << 20)
        return Data(buffer.readableBytesView)
    }

    /// Runs blocking engine work (SQLite, plugin calls) off the server's event loops.
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
        }
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(value)) ?? Data("null".utf8)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func failure(_ status: HTTPResponse.Status, _ message: String) -> Response {
        json(["error": message], status: status)
    }
}
