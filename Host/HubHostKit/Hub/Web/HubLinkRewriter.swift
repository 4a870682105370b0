import Foundation

/// Rewrites the `href` and `src` attributes of an article body (HTML from the verified bundle) as
/// it is rendered, because a browser cannot do these by itself:
/// - `myapp://...` (a registered custom scheme) -> `/hub/app-action?url=...`: the browser would try
///   to hand the URL to the operating system; hubhost turns it into an app action instead (the
///   hub page's script POSTs the link when it is clicked: the route never acts on a GET);
/// - `zbimdb://article/<id>` (and hub, channel) -> the hub page of that item;
/// - in local_only mode, a whitelisted URL with a query, compared verbatim -> `/hub/whitelisted?url=...`
///   (see ContentSecurityPolicy for why).
/// Everything else is left exactly as written.
package struct HubLinkRewriter: Sendable {
    package let settings: HubSettings
    private let schemes: Set<String>

    package init(settings: HubSettings) {
        self.settings = settings
        schemes = Set(settings.customURLSchemes.map { $0.lowercased() })
    }

    /// Whether `url` has one of the registered custom schemes.
    package func isAppAction(_ url: String) -> Bool {
        guard let colon = url.firstIndex(of: ":") else { return false }
        let scheme = url[..<colon].lowercased()
        return schemes.contains(scheme)
    }

    /// The URL a link or resource reference is rendered with; nil: unchanged.
    package func replacement(for url: String, attribute: String) -> String? {
        if attribute == "href", isAppAction(url) { return "/hub/app-action?url=" + HubLinkRewriter.queryEncode(url) }
        if let uri = ContentURI(url) {
            switch uri.kind {
            case .hub: return HubPageLocation.hub.path
            case .channel: return HubPageLocation.channel(uri.id).path
            case .article: return HubPageLocation.article(uri.id).path
            }
        }
        if ContentSecurityPolicy.needsVerbatimCheck(url, settings) { return "/hub/whitelisted?url=" + HubLinkRewriter.queryEncode(url) }
        return nil
    }

    private static let attributePattern = try! NSRegularExpression(
        pattern: #"(?<=[\s"'])(href|src)(\s*=\s*)("([^"]*)"|'([^']*)')"#, options: [.caseInsensitive])

    /// `html` with its `href`/`src` attribute values rewritten.
    package func rewrite(_ html: String) -> String {
        let text = html as NSString
        var out = ""
        var last = 0
        for match in HubLinkRewriter.attributePattern.matches(in: html, range: NSRange(location: 0, length: text.length)) {
            let attribute = text.substring(with: match.range(at: 1)).lowercased()
            let valueRange = match.range(at: 4).location != NSNotFound ? match.range(at: 4) : match.range(at: 5)
            let value = HubLinkRewriter.unescapeAttribute(text.substring(with: valueRange))
            guard let replacement = replacement(for: value, attribute: attribute) else { continue }
            out += text.substring(with: NSRange(location: last, length: match.range.location - last))
            out += text.substring(with: match.range(at: 1)) + "=\"" + HubPageTemplates.escape(replacement) + "\""
            last = match.range.location + match.range.length
        }
        out += text.substring(from: last)
        return out
    }

    static func queryEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// The common entities an author writes in attribute values (`&amp;` in a query).
    static func unescapeAttribute(_ value: String) -> String {
        guard value.contains("&") else { return value }
        return value.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}
