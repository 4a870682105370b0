import Foundation
import HubHostKit
import Hummingbird

/// The event engine over HTTP.
///
///   POST /v1/events                      one event, a list, or {"events": [...]} (see EventInput): stored whole
///                                        or not at all; 201 with the stored events; 409 for an id already stored
///   GET  /v1/events?status=S&limit=N     stored events, newest first
///   GET  /v1/events/stats                counts by status
///   POST /v1/events/flush                post what is due now; the DeliveryReport
///   POST /v1/open-url                    {"url": "..."}: a deep link; the tracked event
///   POST /v1/notifications/received      a notification payload (JSON object of strings); the tracked event
///   POST /v1/notifications/opened        same, opened
enum EventRoutes {
    static func add(to router: Router<BasicRequestContext>, engine: EventEngine) {
        let eventPaths = router.group("/v1/events")
        eventPaths.post("") { request, _ in
            var events = try EventInput.parse(try await HTTPAPI.body(request))
            // Kept with each event and sent on by its sink: the consumer joins the trace.
            if let traceparent = RequestTrace.traceparent(of: request) {
                for index in events.indices where events[index].traceparent == nil { events[index].traceparent = traceparent }
            }
            // Committed with the events of concurrent requests (group commit); answered once on
            // disk. Never flushes here: the delivery service is woken when cache_size events wait.
            let tracked = try await engine.trackGrouped(events)
            // Encoded by hand: JSONEncoder was a large part of a one-event request's time.
            return HTTPAPI.json(events: tracked, status: .created)
        }
        eventPaths.get("") { request, _ in
            var status: EventStatus?
            if let text = request.uri.queryParameters.get("status") {
                guard let parsed = EventStatus(rawValue: text.uppercased()) else {
                    throw APIError(
                        .badRequest, "unknown status '\(text)'; expected one of: \(EventStatus.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                status = parsed
            }
            var limit = 50
            if let text = request.uri.queryParameters.get("limit") {
                guard let number = Int(text), (1...10_000).contains(number) else {
                    throw APIError(.badRequest, "limit is a whole number from 1 to 10000")
                }
                limit = number
            }
            let filter = status
            let count = limit
            let stored = try await HTTPAPI.blocking {
                engine.waitForBackgroundWrites()
                return try engine.store.list(status: filter, limit: count)
            }
            return HTTPAPI.json(stored.map(EventView.init))
        }
        eventPaths.get("/stats") { _, _ in
            let counts = try await HTTPAPI.blocking {
                engine.waitForBackgroundWrites()
                return try engine.store.stats()
            }
            return HTTPAPI.json(Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) }))
        }
        eventPaths.post("/flush") { _, _ in
            HTTPAPI.json(try await HTTPAPI.blocking { engine.flush() })
        }
        router.post("/v1/open-url") { request, _ in
            struct OpenURL: Decodable { var url: String }
            let url = try await HTTPAPI.decode(OpenURL.self, from: request).url
            let (event, _) = try await HTTPAPI.blocking { try engine.openURL(url) }
            return HTTPAPI.json(EventView(event), status: .created)
        }
        router.post("/v1/notifications/:action") { request, context in
            let action = context.parameters.get("action") ?? ""
            guard action == "received" || action == "opened" else { throw APIError(.notFound, "use /v1/notifications/received or /opened") }
            let payload = try await HTTPAPI.decode(NotificationPayload.self, from: request).values
            let event = try await HTTPAPI.blocking { try engine.notification(opened: action == "opened", payload: payload) }
            return HTTPAPI.json(EventView(event), status: .created)
        }
    }

    /// A notification payload: a JSON object whose values are strings, numbers or booleans (kept
    /// as their text, as the payload's keys and values reach the event's attributes).
    struct NotificationPayload: Decodable {
        var values: [String: String]

        init(from decoder: Decoder) throws {
            struct Key: CodingKey {
                var stringValue: String
                var intValue: Int? { nil }
                init(stringValue: String) { self.stringValue = stringValue }
                init?(intValue: Int) { nil }
            }
            let container = try decoder.container(keyedBy: Key.self)
            var values: [String: String] = [:]
            for key in container.allKeys {
                if let text = try? container.decode(String.self, forKey: key) {
                    values[key.stringValue] = text
                } else if let flag = try? container.decode(Bool.self, forKey: key) {
                    values[key.stringValue] = String(flag)
                } else if let number = try? container.decode(Double.self, forKey: key) {
                    values[key.stringValue] = number == number.rounded() && abs(number) < 9e15 ? String(Int64(number)) : String(number)
                } else {
                    throw DecodingError.typeMismatch(
                        String.self, .init(codingPath: [key], debugDescription: "a payload value is a string, number or boolean"))
                }
            }
            self.values = values
        }
    }
}
