import Foundation

/// Deep link routes (the Engage SDK's MobileDeepLinkingConfig, in plugins.yaml `deep_links:`):
/// a route like `campaign/:CurrentCampaign` matches a URL's host and path segment by segment,
/// `:name` capturing a parameter; route parameters may be required and may have a regex the whole
/// value must match. Query items are parameters too. A URL that matches no route still produces its
/// event, with its query parameters.
public struct DeepLinkRouter: Sendable {
    /// A parameter a route names (`deep_links.routes[].parameters.NAME`): a `:name` segment or a query item.
    public struct Parameter: Sendable, Equatable {
        /// The parameter's name: the `:name` of a route segment, or a query item's name.
        public var name: String
        /// true: a URL without this parameter does not match the route (the next route is tried).
        public var required: Bool
        /// The pattern source (for display); the value must match it whole.
        public var regex: String?

        /// A parameter named `name`; `regex`, when given, is a pattern its value must match whole.
        public init(name: String, required: Bool = false, regex: String? = nil) {
            self.name = name
            self.required = required
            self.regex = regex
        }
    }

    /// One route of `deep_links.routes`, as `add(pattern:parameters:)` compiled it.
    public struct Route: Sendable {
        /// The route as configured, e.g. `campaign/:CurrentCampaign`; `Match.route` names it.
        public var pattern: String
        /// The parameters the route checks (required, regex); a `:name` segment not listed here is captured unchecked.
        public var parameters: [Parameter]
        let segments: [String]
        let expressions: [String: NSRegularExpressionBox]
    }

    /// A compiled regex that can be shared across threads (it is immutable once built).
    /// @unchecked: NSRegularExpression is not marked Sendable, though Foundation documents it as
    /// immutable and thread-safe; the box's only field is a `let`.
    final class NSRegularExpressionBox: @unchecked Sendable {
        let expression: NSRegularExpression
        init(_ expression: NSRegularExpression) { self.expression = expression }
    }

    /// The routes, in the order added: `match` tries them in this order and the first that fits wins.
    public private(set) var routes: [Route] = []

    public init() {}

    /// Adds a route; throws a description when a regex does not compile.
    public mutating func add(pattern: String, parameters: [Parameter]) throws {
        var expressions: [String: NSRegularExpressionBox] = [:]
        for parameter in parameters {
            guard let regex = parameter.regex else { continue }
            do {
                expressions[parameter.name] = NSRegularExpressionBox(try NSRegularExpression(pattern: "^(?:\(regex))$"))
            } catch {
                throw DeepLinkConfigError(description: "regex '\(regex)' of parameter '\(parameter.name)' does not compile")
            }
        }
        let segments = pattern.split(separator: "/").map(String.init)
        routes.append(Route(pattern: pattern, parameters: parameters, segments: segments, expressions: expressions))
    }

    /// What `match` found in a URL: the route, the parameters, and why a route whose path fitted was refused.
    public struct Match: Equatable, Sendable {
        /// The route that matched, or nil.
        public var route: String?
        /// The values by name: the URL's query items (an item without a value: "") and, when a route matched,
        /// its `:name` segments percent-decoded, which win over a query item of the same name. Empty for a URL that does not parse.
        public var parameters: [String: String]
        /// Why the first route whose path matched was refused (a required parameter, a regex), if one was.
        public var refusal: String?
    }

    /// The parameters of `url`: from the first route it matches, plus its query items.
    public func match(_ url: String) -> Match {
        guard let components = URLComponents(string: url) else { return Match(route: nil, parameters: [:], refusal: nil) }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let path = ([components.host ?? ""] + components.path.split(separator: "/").map(String.init)).filter { !$0.isEmpty }
        var refusal: String?
        for route in routes where route.segments.count == path.count {
            var captured = query
            var fits = true
            for (pattern, segment) in zip(route.segments, path) {
                if pattern.hasPrefix(":") {
                    captured[String(pattern.dropFirst())] = segment.removingPercentEncoding ?? segment
                } else if pattern != segment {
                    fits = false
                    break
                }
            }
            guard fits else { continue }
            if let problem = check(route, captured) {
                if refusal == nil { refusal = "route '\(route.pattern)': \(problem)" }
                continue
            }
            return Match(route: route.pattern, parameters: captured, refusal: nil)
        }
        return Match(route: nil, parameters: query, refusal: refusal)
    }

    private func check(_ route: Route, _ values: [String: String]) -> String? {
        for parameter in route.parameters {
            guard let value = values[parameter.name] else {
                if parameter.required { return "required parameter '\(parameter.name)' is missing" }
                continue
            }
            if let box = route.expressions[parameter.name] {
                let range = NSRange(value.startIndex..., in: value)
                if box.expression.firstMatch(in: value, range: range) == nil {
                    return "parameter '\(parameter.name)'='\(value)' does not match /\(parameter.regex!)/"
                }
            }
        }
        return nil
    }
}

package struct DeepLinkConfigError: Error, CustomStringConvertible {
    package var description: String
}
