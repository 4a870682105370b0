import Foundation
import HubHostKit
import Hummingbird

/// The categories and sources of the prefetch catalog in `hubhost serve` (the same operations as
/// `hubhost prefetch categories|sources`), their live sets as server-sent events, and the user's
/// toggles. 404 "disabled" when prefetch is off, as every prefetch route.
///
///   GET  /v1/prefetch/categories        ?id= (repeatable) &selected=true|false &parent= &search= &source=
///                                       &with_content=true &sort=FIELD[:desc] (repeatable) &limit=N
///   GET  /v1/prefetch/categories/watch  the live set of the same filter (event: initial, willChange, didChange)
///   POST /v1/prefetch/categories/select|deselect   {"ids": [...]}: one answer per id
///   GET  /v1/prefetch/sources           ?name= (repeatable) &subscribed=true|false &search= &category=
///                                       &with_content=true &sort= &limit=
///   GET  /v1/prefetch/sources/watch     the live set of the same filter
///   POST /v1/prefetch/sources/subscribe|unsubscribe {"names": [...]}
enum PrefetchCatalogRoutes {
    struct Names: Decodable { var names: [String] }

    static func flag(_ query: Parameters, _ name: String) throws -> Bool? {
        guard let text = query.get(name) else { return nil }
        switch text {
        case "true": return true
        case "false": return false
        default: throw APIError(.badRequest, "'\(name)' must be true or false, not '\(text)'")
        }
    }

    static func limit(_ query: Parameters) throws -> Int? {
        guard let text = query.get("limit") else { return nil }
        guard let limit = Int(text), limit >= 0 else { throw APIError(.badRequest, "'limit' must be a whole number, 0 or more") }
        return limit
    }

    static func sorts<Field: PrefetchSortField>(_ query: Parameters) throws -> [PrefetchSortDescriptor<Field>] {
        try query.getAll("sort").map { text in
            guard let sort = PrefetchSortDescriptor<Field>(String(text)) else {
                throw APIError(
                    .badRequest,
                    "bad sort '\(text)'; expected FIELD or FIELD:desc with FIELD one of \(Field.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return sort
        }
    }

    /// The repeatable values of `name`, at most PrefetchRoutes.maxIDs (one SQL variable each).
    static func list(_ query: Parameters, _ name: String) throws -> [String] {
        let values = query.getAll(name).map { String($0) }
        guard values.count <= PrefetchRoutes.maxIDs else { throw APIError(.badRequest, "at most \(PrefetchRoutes.maxIDs) '\(name)' values") }
        return values
    }

    static func categoryFilter(_ request: Request) throws -> PrefetchCategoryFilter {
        let query = request.uri.queryParameters
        return PrefetchCategoryFilter(
            ids: try list(query, "id"), selected: try flag(query, "selected"), suggested: try flag(query, "suggested"),
            parent: query.get("parent").map { String($0) }, search: query.get("search").map { String($0) },
            source: query.get("source").map { String($0) }, withContent: try flag(query, "with_content") ?? false,
            sort: try sorts(query), limit: try limit(query))
    }

    static func sourceFilter(_ request: Request) throws -> PrefetchSourceFilter {
        let query = request.uri.queryParameters
        return PrefetchSourceFilter(
            names: try list(query, "name"), subscribed: try flag(query, "subscribed"),
            search: query.get("search").map { String($0) }, category: query.get("category").map { String($0) },
            withContent: try flag(query, "with_content") ?? false, sort: try sorts(query), limit: try limit(query))
    }

    /// A set change with `name` (its phase) beside its fields, as PrefetchRoutes.NamedChange.
    struct Named<Change: Encodable>: Encodable {
        let name: String
        let change: Change
        enum Key: String, CodingKey { case name }
        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(name, forKey: .name)
            try change.encode(to: encoder)
        }
    }

    /// A live set as server-sent events (`event:` the phase, `data:` the change with `name`).
    static func stream<Change: Encodable & Sendable>(
        _ prelude: String, _ changes: AsyncStream<Change>,
        phase: @escaping @Sendable (Change) -> PrefetchSetPhase
    ) -> Response {
        ServerSentEventStream.response(prelude: prelude) { continuation in
            let task = Task {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                for await change in changes {
                    let name = phase(change).rawValue
                    let data = (try? encoder.encode(Named(name: name, change: change))).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
                    continuation.yield("event: \(name)\ndata: \(data)\n\n")
                }
            }
            return { task.cancel() }
        }
    }

    static func add(to router: Router<BasicRequestContext>, host: HubHost) {
        let prefetch = router.group("/v1/prefetch")
        prefetch.get("/categories") { request, _ in
            let engine = try PrefetchRoutes.engine(host)
            let filter = try categoryFilter(request)
            return HTTPAPI.json(try await HTTPAPI.blocking { try engine.categories(filter) })
        }
        prefetch.get("/categories/watch") { request, _ in
            let engine = try PrefetchRoutes.engine(host)
            return stream("hubhost prefetch categories", engine.watchCategories(try categoryFilter(request)), phase: \.phase)
        }
        prefetch.get("/sources") { request, _ in
            let engine = try PrefetchRoutes.engine(host)
            let filter = try sourceFilter(request)
            return HTTPAPI.json(try await HTTPAPI.blocking { try engine.sources(filter) })
        }
        prefetch.get("/sources/watch") { request, _ in
            let engine = try PrefetchRoutes.engine(host)
            return stream("hubhost prefetch sources", engine.watchSources(try sourceFilter(request)), phase: \.phase)
        }
        @Sendable func select(_ request: Request, _ value: Bool) async throws -> Response {
            let engine = try PrefetchRoutes.engine(host)
            let body = try await PrefetchRoutes.ids(request)
            return HTTPAPI.json(PrefetchRoutes.Answers(answers: try await HTTPAPI.blocking { try engine.setSelected(body.ids, value) }))
        }
        @Sendable func subscribe(_ request: Request, _ value: Bool) async throws -> Response {
            let engine = try PrefetchRoutes.engine(host)
            let body = try await HTTPAPI.decode(Names.self, from: request)
            guard !body.names.isEmpty, body.names.count <= PrefetchRoutes.maxIDs else {
                throw APIError(.badRequest, "'names' must name 1 to \(PrefetchRoutes.maxIDs) sources")
            }
            return HTTPAPI.json(PrefetchRoutes.Answers(answers: try await HTTPAPI.blocking { try engine.setSubscribed(body.names, value) }))
        }
        prefetch.post("/categories/select") { request, _ in try await select(request, true) }
        prefetch.post("/categories/deselect") { request, _ in try await select(request, false) }
        prefetch.post("/sources/subscribe") { request, _ in try await subscribe(request, true) }
        prefetch.post("/sources/unsubscribe") { request, _ in try await subscribe(request, false) }
    }
}
