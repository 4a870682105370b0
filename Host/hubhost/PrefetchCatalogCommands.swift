import ArgumentParser
import Foundation
import HubHostKit

/// The item filter options `prefetch items` and `prefetch watch --items` share.
struct PrefetchItemFilterOptions: ParsableArguments {
    @Option(name: .customLong("state"), help: "Only items in this state (repeatable).") var states: [String] = []
    @Option(help: "Only items of this category (with --sources: sources of this category's items).") var category: String?
    @Option(name: .customLong("content-id"), help: "Only items with this contentId (repeatable; with --source).") var contentIds: [String] = []
    @Option(help: "Only items of this source (with --categories: categories of this source's items).") var source: String?
    @Flag(help: "Only saved items.") var saved = false
    @Flag(name: .customLong("not-viewed"), help: "Only items not viewed.") var notViewed = false
    @Option(name: .customLong("type"), help: "Only items of this type, e.g. video (repeatable; the PCD SDK's video filters).") var types: [String] =
        []
    @Option(help: "Sort by FIELD or FIELD:desc (repeatable).") var sort: [String] = []
    @Option(help: "At most this many objects.") var limit: Int?

    func filter() throws -> PrefetchItemFilter {
        let parsedStates = try states.map { text -> PrefetchItemState in
            guard let state = PrefetchItemState(rawValue: text) else {
                throw ValidationError(
                    "unknown state '\(text)'; expected one of: \(PrefetchItemState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return state
        }
        let sorts = try sort.map { text -> PrefetchItemFilter.Sort in
            guard let parsed = PrefetchItemFilter.Sort(text) else {
                throw ValidationError(
                    "bad sort '\(text)'; expected FIELD or FIELD:desc with FIELD one of: \(PrefetchItemFilter.Field.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            return parsed
        }
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        return PrefetchItemFilter(
            states: parsedStates, category: category, contentIds: contentIds, source: source,
            saved: saved ? true : nil, notViewed: notViewed, types: types, sort: sorts, limit: limit)
    }
}

/// Parsing shared by the category and source commands.
enum PrefetchFilterParsing {
    static func sorts<Field: PrefetchSortField>(_ texts: [String]) throws -> [PrefetchSortDescriptor<Field>] {
        try texts.map { text in
            guard let sort = PrefetchSortDescriptor<Field>(text) else {
                throw ValidationError(
                    "bad sort '\(text)'; expected FIELD or FIELD:desc with FIELD one of: \(Field.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return sort
        }
    }

    /// true, false or nil (neither flag) from a --x / --not-x pair; both is an error.
    static func choice(_ yes: Bool, _ no: Bool, _ name: String) throws -> Bool? {
        if yes && no { throw ValidationError("give --\(name) or --not-\(name), not both") }
        return yes ? true : no ? false : nil
    }

    static func limit(_ limit: Int?) throws -> Int? {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        return limit
    }
}

extension PrefetchCommand {
    struct Categories: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "categories",
            abstract: "List categories, filtered and sorted; --select/--deselect change which are selected first.",
            discussion: """
                The PCD SDK's category filters: all (no option), categoriesSelected (--selected), categoriesSelectedWithContent \
                (--selected --with-content), subCategories (--parent ID), search (--search TEXT: in the name or id, ignoring \
                case), suggestions (--suggested); and --source S (the categories of that source's items), --id ID. Sort fields: \
                \(PrefetchCategoryFilter.Field.allCases.map(\.rawValue).joined(separator: ", ")); add :desc to reverse. \
                Exit 1 when --select or --deselect names an unknown category.
                """)
        @OptionGroup var common: Common
        @Option(help: "Only this category (repeatable).") var id: [String] = []
        @Flag(help: "Only selected categories.") var selected = false
        @Flag(name: .customLong("not-selected"), help: "Only categories not selected.") var notSelected = false
        @Flag(help: "Only the categories the service suggests (the PCD SDK's suggestions filter).") var suggested = false
        @Option(help: "Only subcategories of this category.") var parent: String?
        @Option(help: "Only categories whose name or id contains this text (case ignored).") var search: String?
        @Option(help: "Only categories with items (not deleted) of this source.") var source: String?
        @Flag(name: .customLong("with-content"), help: "Only categories with at least one item that is not deleted.") var withContent = false
        @Option(help: "Sort by FIELD or FIELD:desc (repeatable).") var sort: [String] = []
        @Option(help: "At most this many categories.") var limit: Int?
        @Option(help: "Select this category first (repeatable).") var select: [String] = []
        @Option(help: "Deselect this category first (repeatable).") var deselect: [String] = []

        func filter() throws -> PrefetchCategoryFilter {
            PrefetchCategoryFilter(
                ids: id, selected: try PrefetchFilterParsing.choice(selected, notSelected, "selected"), suggested: suggested ? true : nil,
                parent: parent,
                search: search, source: source, withContent: withContent, sort: try PrefetchFilterParsing.sorts(sort),
                limit: try PrefetchFilterParsing.limit(limit))
        }

        func validate() throws { _ = try filter() }

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            let answers = try engine.setSelected(select, true) + engine.setSelected(deselect, false)
            let categories = try engine.categories(try filter())
            if common.output.json {
                Output.json(categories)
            } else {
                Output.table(["id", "name", "parent", "selected"], categories.map { [$0.id, $0.name, $0.parent ?? "", $0.selected ? "yes" : "no"] })
            }
            try PrefetchCommand.refusals(answers)
        }
    }

    struct Sources: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sources",
            abstract: "List sources, filtered and sorted; --subscribe/--unsubscribe toggle sources first.",
            discussion: """
                The PCD SDK's source filter is allWithSort (no option); hubhost adds --subscribed / --not-subscribed, --name N, \
                --search TEXT (in the name or display name, ignoring case), --category C (the sources of that category's items) \
                and --with-content. Sort fields: \(PrefetchSourceFilter.Field.allCases.map(\.rawValue).joined(separator: ", ")); \
                add :desc to reverse. Exit 1 when --subscribe or --unsubscribe names an unknown source.
                """)
        @OptionGroup var common: Common
        @Option(help: "Only this source (repeatable).") var name: [String] = []
        @Flag(help: "Only subscribed sources.") var subscribed = false
        @Flag(name: .customLong("not-subscribed"), help: "Only sources not subscribed.") var notSubscribed = false
        @Option(help: "Only sources whose name or display name contains this text (case ignored).") var search: String?
        @Option(help: "Only sources with items (not deleted) in this category.") var category: String?
        @Flag(name: .customLong("with-content"), help: "Only sources with at least one item that is not deleted.") var withContent = false
        @Option(help: "Sort by FIELD or FIELD:desc (repeatable).") var sort: [String] = []
        @Option(help: "At most this many sources.") var limit: Int?
        @Option(help: "Subscribe to this source first (repeatable).") var subscribe: [String] = []
        @Option(help: "Unsubscribe from this source first (repeatable).") var unsubscribe: [String] = []

        func filter() throws -> PrefetchSourceFilter {
            PrefetchSourceFilter(
                names: name, subscribed: try PrefetchFilterParsing.choice(subscribed, notSubscribed, "subscribed"), search: search,
                category: category, withContent: withContent, sort: try PrefetchFilterParsing.sorts(sort),
                limit: try PrefetchFilterParsing.limit(limit))
        }

        func validate() throws { _ = try filter() }

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            let answers = try engine.setSubscribed(subscribe, true) + engine.setSubscribed(unsubscribe, false)
            let sources = try engine.sources(try filter())
            if common.output.json {
                Output.json(sources)
            } else {
                Output.table(["name", "display name", "subscribed"], sources.map { [$0.name, $0.displayName, $0.subscribed ? "yes" : "no"] })
            }
            try PrefetchCommand.refusals(answers)
        }
    }

    /// Refused toggles go to stderr with exit status 1 (the list was printed).
    static func refusals(_ answers: [PrefetchEngine.Answer]) throws {
        let refused = answers.filter { !$0.accepted }
        guard !refused.isEmpty else { return }
        for answer in refused { Output.error("\(answer.id): \(answer.reason ?? "refused")") }
        throw ExitCode.failed
    }
}

/// `prefetch watch --items|--categories|--sources [filters]`: the CLI view of a live set, read
/// from the server-sent events of a running serve (the same ServerSentEventReader as hub watch).
struct PrefetchSetWatchOptions: ParsableArguments {
    @Flag(help: "Watch the live set of items (filtered by --state, --category, --content-id, --source, --saved, --not-viewed).") var items = false
    @Flag(help: "Watch the live set of categories (filtered by --selected, --parent, --search, --source, --with-content).") var categories = false
    @Flag(help: "Watch the live set of sources (filtered by --subscribed, --search, --category, --with-content).") var sources = false
    @OptionGroup var itemFilter: PrefetchItemFilterOptions
    @Flag(help: "Categories: only selected ones.") var selected = false
    @Flag(name: .customLong("not-selected"), help: "Categories: only those not selected.") var notSelected = false
    @Flag(help: "Sources: only subscribed ones.") var subscribed = false
    @Flag(name: .customLong("not-subscribed"), help: "Sources: only those not subscribed.") var notSubscribed = false
    @Flag(name: .customLong("with-content"), help: "Categories or sources with at least one item that is not deleted.") var withContent = false
    @Option(help: "Categories: only subcategories of this one.") var parent: String?
    @Option(help: "Categories or sources: only those whose name contains this text.") var search: String?

    var chosen: Bool { items || categories || sources }

    func validate(count: Int?, timeout: Double?) throws {
        if [items, categories, sources].filter({ $0 }).count > 1 { throw ValidationError("give one of --items, --categories, --sources") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let timeout, !(timeout > 0 && timeout <= 31_536_000) { throw ValidationError("--timeout must be more than 0 seconds (at most a year)") }
        _ = try query()
    }

    /// The route and query string of the chosen set (the filters checked here, so a typo is a
    /// usage error rather than an HTTP 400 from the server).
    func query() throws -> (path: String, items: [URLQueryItem]) {
        var query: [URLQueryItem] = []
        func add(_ name: String, _ value: String?) { if let value { query.append(URLQueryItem(name: name, value: value)) } }
        let limit = try PrefetchFilterParsing.limit(itemFilter.limit)
        if categories {
            let sorts: [PrefetchCategoryFilter.Sort] = try PrefetchFilterParsing.sorts(itemFilter.sort)
            add("selected", try PrefetchFilterParsing.choice(selected, notSelected, "selected").map(String.init))
            add("parent", parent)
            add("search", search)
            add("source", itemFilter.source)
            if withContent { add("with_content", "true") }
            sorts.forEach { add("sort", $0.text) }
            add("limit", limit.map(String.init))
            return ("/v1/prefetch/categories/watch", query)
        }
        if sources {
            let sorts: [PrefetchSourceFilter.Sort] = try PrefetchFilterParsing.sorts(itemFilter.sort)
            add("subscribed", try PrefetchFilterParsing.choice(subscribed, notSubscribed, "subscribed").map(String.init))
            add("search", search)
            add("category", itemFilter.category)
            if withContent { add("with_content", "true") }
            sorts.forEach { add("sort", $0.text) }
            add("limit", limit.map(String.init))
            return ("/v1/prefetch/sources/watch", query)
        }
        let filter = try itemFilter.filter()
        filter.states.forEach { add("state", $0.rawValue) }
        add("category", filter.category)
        filter.contentIds.forEach { add("content_id", $0) }
        add("source", filter.source)
        if filter.saved == true { add("saved", "true") }
        if filter.notViewed { add("not_viewed", "true") }
        filter.types.forEach { add("type", $0) }
        filter.sort.forEach { add("sort", $0.field.rawValue + ($0.descending ? ":desc" : "")) }
        add("limit", filter.limit.map(String.init))
        return ("/v1/prefetch/items/watch", query)
    }

    func run(url: String?, manifest: String, json: Bool, count: Int?, timeout: Double?) throws {
        let server = try ManifestOption.server(url, manifest: manifest)
        let base = server.url
        let (path, items) = try query()
        guard var components = URLComponents(string: base.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + path) else {
            throw ValidationError("'\(base)' is not a URL; expected e.g. http://127.0.0.1:8420")
        }
        if !items.isEmpty { components.queryItems = items }
        guard let streamURL = components.url else { throw ValidationError("'\(base)' is not a URL; expected e.g. http://127.0.0.1:8420") }
        let reader = ServerSentEventReader(names: [], limit: count, json: json, format: PrefetchSetWatchOptions.line)
        switch reader.run(streamURL, token: server.token, timeout: timeout) {
        case .done: return
        case .timedOut:
            if let count {
                Output.error("prefetch watch: \(reader.printed) of \(count) changes within \(timeout ?? 0) s")
                throw ExitCode.failed
            }
        case .failed(let message):
            Output.error("prefetch watch: \(streamURL.absoluteString): \(message) (is hubhost serve running there with prefetch enabled?)")
            throw ExitCode.failed
        }
    }

    /// One text line per change: time, phase, the ids added (+), updated (~) and removed (-), at
    /// most 20 of each, and the size of the set after the change.
    static func line(_ event: String, _ data: String) -> String {
        let object = (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:]
        func ids(_ key: String, _ mark: String) -> String? {
            let list = object[key] as? [String] ?? []
            guard !list.isEmpty else { return nil }
            return mark + list.prefix(20).joined(separator: ",") + (list.count > 20 ? ",…(\(list.count - 20) more)" : "")
        }
        let size = ["items", "categories", "sources"].compactMap { key in (object[key] as? [Any]).map { "\($0.count) \(key)" } }.first ?? ""
        let time = ServerSentEventReader.time(Int64(Date().timeIntervalSince1970 * 1000))
        return ([time, event] + [ids("added", "+"), ids("updated", "~"), ids("removed", "-")].compactMap { $0 } + ["(\(size))"]).joined(
            separator: " ")
    }
}
