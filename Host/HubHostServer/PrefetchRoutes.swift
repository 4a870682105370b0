import Foundation
import HubHostKit
import Hummingbird

/// Content prefetch in `hubhost serve` (the same operations as `hubhost prefetch ...`); 404 with
/// code "disabled" when prefetch.enabled is false. Requests naming items answer 200 with one
/// answer per item ({"answers": [{"id", "accepted", "reason", "state"}]}): a refusal (a cached
/// item asked for again) is a per-item outcome, not an error of the request.
///
///   GET  /v1/prefetch/status           service state, licence source, policy, counts
///   POST /v1/prefetch/register         register now (409 not_registered with the reason, 502 service)
///   POST /v1/prefetch/sync             fetch the catalog's changes
///   GET  /v1/prefetch/items            ?state=S (repeatable) &category= &content_id= (repeatable) &source=
///                                      &saved=true &not_viewed=true &sort=FIELD[:desc] (repeatable) &limit=N
///   GET  /v1/prefetch/items/watch      the live set of the same filter, as server-sent events
///   GET  /v1/prefetch/items/{id}       one item (404 when unknown)
///   POST /v1/prefetch/download         {"ids": [...], "behavior": "full_auto"?, "partial_bytes"|"partial_seconds": N?}
///   POST /v1/prefetch/pause|resume     {"ids": [...]}
///   POST /v1/prefetch/cancel           cancel every download in progress
///   POST /v1/prefetch/fill             force fill: {"queued": [...]}
///   POST /v1/prefetch/delete           {"ids": [...], "files_only": false, "keep_thumbnail": false}
///   POST /v1/prefetch/save|unsave|lock|unlock {"ids": [...]}
///   POST /v1/prefetch/consume          {"id", "start", "end", "at_ms"?}: 201 with the record
///   GET  /v1/prefetch/lookup           ?source=S&content_id=A (repeatable): {"items", "missing"}
///   POST /v1/prefetch/purge            run the purge rules now
///   POST /v1/prefetch/import           one import metadata object or an array: one answer per item
///   GET  /v1/prefetch/policy           the policy in force
///   PUT  /v1/prefetch/policy           {"network_selection": "wifi"|"cellular"|"both"|null}
enum PrefetchRoutes {
    struct IDs: Decodable {
        var ids: [String]
        var behavior: String?
        var partial_bytes: Int64?
        var partial_seconds: Double?
    }
    struct DeleteBody: Decodable {
        var ids: [String]
        var files_only: Bool?
        var keep_thumbnail: Bool?
    }
    struct PolicyBody: Decodable { var network_selection: String? }
    struct ConsumeBody: Decodable {
        var id: String
        var start: Double
        var end: Double
        var at_ms: Int64?
    }
    struct Answers: Encodable { var answers: [PrefetchEngine.Answer] }
    struct Queued: Encodable { var queued: [String] }
    /// The most ids one request may name.
    static let maxIDs = 10_000

    static func engine(_ host: HubHost) throws -> PrefetchEngine {
        guard let engine = try host.prefetch() else { throw APIError.engineOff("content prefetch is off (prefetch: enabled: false)") }
        return engine
    }

    static func ids(_ request: Request) async throws -> IDs {
        let body = try await HTTPAPI.decode(IDs.self, from: request)
        guard !body.ids.isEmpty, body.ids.count <= maxIDs else { throw APIError(.badRequest, "'ids' must name 1 to \(maxIDs) items") }
        return body
    }

    /// The item filter of a query string (the parameters of GET /v1/prefetch/items).
    static func filter(_ request: Request) throws -> PrefetchItemFilter {
        let query = request.uri.queryParameters
        var filter = PrefetchItemFilter()
        for text in query.getAll("state") {
            guard let state = PrefetchItemState(rawValue: String(text)) else { throw APIError(.badRequest, "unknown state '\(text)'") }
            filter.states.append(state)
        }
        for text in query.getAll("sort") {
            guard let sort = PrefetchItemFilter.Sort(String(text)) else {
                throw APIError(.badRequest, "bad sort '\(text)'; expected FIELD or FIELD:desc")
            }
            filter.sort.append(sort)
        }
        filter.category = query.get("category").map { String($0) }
        filter.source = query.get("source").map { String($0) }
        filter.contentIds = query.getAll("content_id").map { String($0) }
        if let saved = query.get("saved") { filter.saved = saved == "true" }
        filter.notViewed = query.get("not_viewed") == "true"
        filter.types = query.getAll("type").map { String($0) }
        if let text = query.get("limit") {
            guard let limit = Int(text), limit >= 0 else { throw APIError(.badRequest, "'limit' must be a whole number, 0 or more") }
            filter.limit = limit
        }
        return filter
    }

    /// A change with `name` (its phase) beside its fields, as every event of hubhost's streams
    /// names itself in its data.
    struct NamedChange: Encodable {
        let change: PrefetchSetChange
        enum Key: String, CodingKey { case name }
        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(change.phase.rawValue, forKey: .name)
            try change.encode(to: encoder)
        }
    }

    /// `GET /v1/prefetch/items/watch`: the live set as server-sent events (`event: initial`,
    /// `willChange`, `didChange`; `data:` a PrefetchSetChange), a keep-alive comment every 2 s,
    /// until the client goes away or the server shuts down.
    static func watchStream(_ engine: PrefetchEngine, _ filter: PrefetchItemFilter) -> Response {
        ServerSentEventStream.response(prelude: "hubhost prefetch items") { continuation in
            let changes = Task {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                for await change in engine.watch(filter) {
                    let data = (try? encoder.encode(NamedChange(change: change))).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
                    continuation.yield("event: \(change.phase.rawValue)\ndata: \(data)\n\n")
                }
            }
            return { changes.cancel() }
        }
    }

    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        let prefetch = router.group("/v1/prefetch")
        addState(prefetch, host: host)
        addItems(prefetch, host: host)
        addDownloads(prefetch, host: host)
    }

    /// The engine's state and policy: status, register, sync, lookup, purge, policy.
    private static func addState(_ prefetch: RouterGroup<BasicRequestContext>, host: HubHost) {
        prefetch.get("/status") { _, _ in
            let engine = try engine(host)
            return HTTPAPI.json(try await HTTPAPI.blocking { try engine.status() })
        }
        prefetch.post("/register") { _, _ in
            let engine = try engine(host)
            return HTTPAPI.json(
                try await HTTPAPI.blocking {
                    try engine.register()
                    return try engine.status()
                })
        }
        prefetch.post("/sync") { _, _ in
            let engine = try engine(host)
            return HTTPAPI.json(try await HTTPAPI.blocking { try engine.sync() })
        }
        prefetch.get("/lookup") { request, _ in
            let engine = try engine(host)
            let query = request.uri.queryParameters
            guard let source = query.get("source").map({ String($0) }), !source.isEmpty else { throw APIError(.badRequest, "'source' is required") }
            let ids = query.getAll("content_id").map { String($0) }
            return HTTPAPI.json(try await HTTPAPI.blocking { try engine.lookup(contentIds: ids, source: source) })
        }
        prefetch.post("/purge") { _, _ in
            let engine = try engine(host)
            return HTTPAPI.json(try await HTTPAPI.blocking { try engine.purge() })
        }
        prefetch.get("/policy") { _, _ in
            let engine = try engine(host)
            return HTTPAPI.json(try await HTTPAPI.blocking { try engine.status() })
        }
        prefetch.put("/policy") { request, _ in
            let engine = try engine(host)
            let body = try await HTTPAPI.decode(PolicyBody.self, from: request)
            var selection: PrefetchSettings.NetworkSelection?
            if let text = body.network_selection {
                guard let parsed = PrefetchSettings.NetworkSelection(rawValue: text) else {
                    throw APIError(.badRequest, "unknown network_selection '\(text)'; expected wifi, cellular, both or null")
                }
                selection = parsed
            }
            let chosen = selection
            return HTTPAPI.json(
                try await HTTPAPI.blocking {
                    try engine.setNetworkSelectionOverride(chosen)
                    return try engine.status()
                })
        }
    }

    /// The items: listed, watched, one by id, consumption, imports and deletes.
    private static func addItems(_ prefetch: RouterGroup<BasicRequestContext>, host: HubHost) {
        prefetch.get("/items") { request, _ in
            let engine = try engine(host)
            let chosen = try filter(request)
            return HTTPAPI.json(try await HTTPAPI.blocking { try engine.items(chosen) })
        }
        prefetch.get("/items/watch") { request, _ in
            let engine = try engine(host)
            return watchStream(engine, try filter(request))
        }
        prefetch.get("/items/{id}") { _, context in
            let engine = try engine(host)
            let id = try context.parameters.require("id")
            guard let item = try await HTTPAPI.blocking({ try engine.item(id) }) else { throw PrefetchError.unknownItem(id) }
            return HTTPAPI.json(item)
        }
        prefetch.post("/delete") { request, _ in
            let engine = try engine(host)
            let body = try await HTTPAPI.decode(DeleteBody.self, from: request)
            guard !body.ids.isEmpty, body.ids.count <= maxIDs else { throw APIError(.badRequest, "'ids' must name 1 to \(maxIDs) items") }
            return HTTPAPI.json(
                Answers(
                    answers: try await HTTPAPI.blocking {
                        try engine.delete(body.ids, filesOnly: body.files_only ?? false, keepThumbnail: body.keep_thumbnail ?? false)
                    }))
        }
        prefetch.post("/consume") { request, _ in
            let engine = try engine(host)
            let body = try await HTTPAPI.decode(ConsumeBody.self, from: request)
            var date = Date()
            if let ms = body.at_ms {
                guard (0...253_402_300_799_000).contains(ms) else { throw APIError(.badRequest, "'at_ms' is out of range") }
                date = Date(timeIntervalSince1970: Double(ms) / 1000)
            }
            let when = date
            return HTTPAPI.json(
                try await HTTPAPI.blocking { try engine.recordConsumption(body.id, date: when, start: body.start, end: body.end) },
                status: .created)
        }
        prefetch.post("/import") { request, _ in
            let engine = try engine(host)
            let data = try await HTTPAPI.body(request)
            let list: [PrefetchImportMetadata]
            if let many = try? JSONDecoder().decode([PrefetchImportMetadata].self, from: data) {
                list = many
            } else {
                list = [try JSONDecoder().decode(PrefetchImportMetadata.self, from: data)]
            }
            guard !list.isEmpty, list.count <= maxIDs else { throw APIError(.badRequest, "import 1 to \(maxIDs) items") }
            return HTTPAPI.json(
                Answers(
                    answers: try await HTTPAPI.blocking {
                        list.map { metadata in
                            do {
                                let item = try engine.addDownloadedItem(metadata)
                                return PrefetchEngine.Answer(id: item.uniqueId, accepted: true, reason: nil, state: item.state)
                            } catch {
                                return PrefetchEngine.Answer(
                                    id: "\(metadata.provider):\(metadata.contentId)", accepted: false, reason: "\(error)", state: nil)
                            }
                        }
                    }))
        }
    }

    /// Downloads and the items' flags: download, resume, pause, cancel, fill, save, lock.
    private static func addDownloads(_ prefetch: RouterGroup<BasicRequestContext>, host: HubHost) {
        prefetch.post("/download") { request, _ in
            let engine = try engine(host)
            let body = try await ids(request)
            var behavior: PrefetchSettings.DownloadBehavior?
            if let text = body.behavior {
                guard let parsed = PrefetchSettings.DownloadBehavior(rawValue: text) else {
                    throw APIError(.badRequest, "unknown behavior '\(text)'")
                }
                behavior = parsed
            }
            let chosen = behavior
            let partial: PrefetchPartialLength?
            switch (body.partial_bytes, body.partial_seconds) {
            case (nil, nil): partial = nil
            case (let bytes?, nil): partial = .bytes(bytes)
            case (nil, let seconds?): partial = .seconds(seconds)
            default: throw APIError(.badRequest, "give partial_bytes or partial_seconds, not both")
            }
            do { _ = try partial?.validated() } catch { throw APIError(.badRequest, "\(error)") }
            return HTTPAPI.json(Answers(answers: try await HTTPAPI.blocking { try engine.download(body.ids, behavior: chosen, partial: partial) }))
        }
        prefetch.post("/resume") { request, _ in
            let engine = try engine(host)
            let body = try await ids(request)
            return HTTPAPI.json(Answers(answers: try await HTTPAPI.blocking { try engine.download(body.ids) }))
        }
        prefetch.post("/pause") { request, _ in
            let engine = try engine(host)
            let body = try await ids(request)
            return HTTPAPI.json(Answers(answers: try await HTTPAPI.blocking { try engine.pause(body.ids) }))
        }
        prefetch.post("/cancel") { _, _ in
            let engine = try engine(host)
            return HTTPAPI.json(Answers(answers: try await HTTPAPI.blocking { try engine.cancelCurrentDownloads() }))
        }
        prefetch.post("/fill") { _, _ in
            let engine = try engine(host)
            return HTTPAPI.json(Queued(queued: try await HTTPAPI.blocking { try engine.fill() }))
        }
        @Sendable func flag(_ flag: PrefetchEngine.Flag, _ value: Bool, _ request: Request) async throws -> Response {
            let engine = try engine(host)
            let body = try await ids(request)
            return HTTPAPI.json(Answers(answers: try await HTTPAPI.blocking { engine.set(flag, value, on: body.ids) }))
        }
        prefetch.post("/save") { request, _ in try await flag(.saved, true, request) }
        prefetch.post("/unsave") { request, _ in try await flag(.saved, false, request) }
        prefetch.post("/lock") { request, _ in try await flag(.locked, true, request) }
        prefetch.post("/unlock") { request, _ in try await flag(.locked, false, request) }
    }
}
