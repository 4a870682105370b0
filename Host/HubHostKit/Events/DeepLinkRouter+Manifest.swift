import Foundation
import Yams

/// `deep_links:` in plugins.yaml, parsed by the router itself.
extension DeepLinkRouter: ManifestSection {
    public static let sectionName = "deep_links"
    public static let summary =
        "Deep link routes (the Engage SDK's MobileDeepLinkingConfig): which parts of an opened URL are parameters, such as the current campaign. Query items are parameters too; a URL that matches no route still produces its event."
    /// deep_links has no scalar keys: its routes are described by `structuredKeys`.
    package static let schema = ConfigSchema(keys: [])
    package static var structuredKeys: [ConfigReferenceEntry] {
        [
            ConfigReferenceEntry(
                key: "deep_links.routes", type: "list of maps", defaultValue: "[]",
                doc: "The routes, tried in order; the first that matches an opened URL's path names its parameters."),
            ConfigReferenceEntry(
                key: "deep_links.routes[].route", type: "string, required",
                doc:
                    "A pattern matched against the URL's host and path segment by segment, :name capturing a parameter, e.g. campaign/:CurrentCampaign."
            ),
            ConfigReferenceEntry(
                key: "deep_links.routes[].parameters.NAME.required", type: "bool", defaultValue: "false",
                doc: "true: a URL without this parameter does not match the route."),
            ConfigReferenceEntry(
                key: "deep_links.routes[].parameters.NAME.regex", type: "string",
                doc: "A regular expression the whole value must match.")
        ]
    }

    /// `deep_links: {routes: [{route: "campaign/:CurrentCampaign", parameters: {CurrentCampaign: {required: true, regex: ...}}}]}`
    package init(section node: Node, context: ManifestSectionContext) {
        let reader = context.reader
        var router = DeepLinkRouter()
        defer { self = router }
        guard let entries = reader.mapping(node, key: "deep_links") else { return }
        let fields = reader.known(entries, allowed: ["routes"], in: "deep_links")
        guard let routesNode = fields["routes"]?.value, let items = reader.sequence(routesNode, key: "deep_links.routes") else { return }
        for (index, item) in items.enumerated() {
            let path = "deep_links.routes[\(index)]"
            guard let itemEntries = reader.mapping(item, key: path) else { continue }
            let routeFields = reader.known(itemEntries, allowed: ["route", "parameters"], in: path)
            guard let routeNode = routeFields["route"]?.value, let pattern = reader.string(routeNode, key: "\(path).route") else {
                if routeFields["route"] == nil {
                    reader.report(item, key: "\(path).route", "missing required key 'route' (e.g. campaign/:CurrentCampaign)")
                }
                continue
            }
            var parameters: [DeepLinkRouter.Parameter] = []
            if let parametersNode = routeFields["parameters"]?.value, let parameterEntries = reader.mapping(parametersNode, key: "\(path).parameters")
            {
                for entry in parameterEntries {
                    let key = "\(path).parameters.\(entry.key)"
                    guard let settings = reader.mapping(entry.value, key: key) else { continue }
                    let known = reader.known(settings, allowed: ["required", "regex"], in: key)
                    let required = known["required"].flatMap { reader.bool($0.value, key: "\(key).required") } ?? false
                    let regex = known["regex"].flatMap { reader.string($0.value, key: "\(key).regex") }
                    parameters.append(.init(name: entry.key, required: required, regex: regex))
                }
            }
            do {
                try router.add(pattern: pattern, parameters: parameters)
            } catch {
                reader.report(routeNode, key: "\(path).route", "\(error)")
            }
        }
    }

    package var effectiveValues: [EffectiveSetting] {
        [
            EffectiveSetting(
                key: "deep_links.routes",
                value: .array(
                    routes.map { route in
                        .object([
                            "route": .string(route.pattern),
                            "parameters": .object(
                                Dictionary(
                                    uniqueKeysWithValues: route.parameters.map { parameter in
                                        (
                                            parameter.name,
                                            JSONValue.object([
                                                "required": .bool(parameter.required), "regex": parameter.regex.map(JSONValue.string) ?? .null
                                            ])
                                        )
                                    }))
                        ])
                    }), line: nil, doc: "Deep link routes: a pattern and its parameters.")
        ]
    }
}

extension HostManifest {
    /// Deep link routes (`deep_links:`).
    public var deepLinks: DeepLinkRouter {
        get { section(DeepLinkRouter.self) }
        set { setSection(newValue) }
    }
}
