import Foundation

/// The Content-Security-Policy header of hub pages (the ZBiM SDK's "Security" section), and what
/// the browser cannot enforce by itself.
///
/// - `external_allowed` (default): pages may load anything; violations are still reported.
/// - `local_only`: only the hub's own origin (`'self'`: same scheme, host AND port as `hubhost
///   serve`) plus the whitelists:
///   - a whitelisted domain becomes the host sources `domain:*` and `*.domain:*` (any port, http/https);
///   - a whitelisted URL without a query becomes a host source with its exact path (CSP matches a
///     path that does not end in `/` exactly);
///   - a whitelisted URL WITH a query cannot be expressed: CSP source expressions ignore queries,
///     so listing its path would also allow any other query. Such URLs are left out of the policy;
///     instead, pages rewrite every `src`/`href` equal to the URL verbatim to
///     `/hub/whitelisted?url=...` (same origin), and hubhost fetches it only if it is in
///     `whitelist_urls` verbatim (`WebContentHub.fetchWhitelisted`). Any other query on that path
///     is blocked by the browser and reported.
///
/// Inline scripts and styles are allowed in both modes: they are part of the verified, signed
/// bundle, i.e. local content. Custom URL schemes need no CSP entry: their links are rewritten to
/// `/hub/app-action?url=...` (same origin). Violations are reported to `report-uri
/// /hub/csp-report` (report-uri rather than report-to: Chromium sends report-uri reports at once,
/// while the Reporting API batches them for up to a minute; a policy with both uses only report-to).
package struct ContentSecurityPolicy: Equatable, Sendable {
    package static let reportPath = "/hub/csp-report"

    package var contentSource: HubSettings.ContentSource
    /// Who may frame hub pages (hub.frame_ancestors; default 'self', so another site cannot
    /// frame a hub page and trick its reader into clicks).
    package var frameAncestors: String
    /// Host sources for the whitelists (empty for external_allowed).
    package var allowedSources: [String]

    package init(settings: HubSettings) {
        contentSource = settings.contentSource
        frameAncestors = settings.frameAncestors
        allowedSources = settings.contentSource == .localOnly ? ContentSecurityPolicy.sources(settings) : []
    }

    /// The header's value.
    package var header: String {
        switch contentSource {
        case .externalAllowed:
            return "default-src * data: blob: 'unsafe-inline' 'unsafe-eval'; frame-ancestors \(frameAncestors); report-uri \(Self.reportPath)"
        case .localOnly:
            let extra = allowedSources.isEmpty ? "" : " " + allowedSources.joined(separator: " ")
            return [
                "default-src 'self'\(extra)",
                "script-src 'self' 'unsafe-inline'\(extra)",
                "style-src 'self' 'unsafe-inline'\(extra)",
                "img-src 'self' data:\(extra)",
                "font-src 'self' data:\(extra)",
                "object-src 'none'",
                "base-uri 'self'",
                "form-action 'self'",
                "frame-ancestors \(frameAncestors)",
                "report-uri \(Self.reportPath)"
            ].joined(separator: "; ")
        }
    }

    /// X-Frame-Options for browsers without frame-ancestors: only 'self' and 'none' can be said there.
    package var frameOptions: String? {
        switch frameAncestors.trimmingCharacters(in: .whitespaces) {
        case "'self'": return "SAMEORIGIN"
        case "'none'": return "DENY"
        default: return nil
        }
    }

    /// The headers every hub page carries.
    package var pageHeaders: [String: String] {
        var headers = ["Content-Security-Policy": header, "X-Content-Type-Options": "nosniff"]
        if let frameOptions { headers["X-Frame-Options"] = frameOptions }
        return headers
    }

    /// Whether `url` (an attribute value as the page author wrote it) is a whitelisted URL that
    /// needs hubhost's verbatim check (it has a query) in local_only mode.
    package static func needsVerbatimCheck(_ url: String, _ settings: HubSettings) -> Bool {
        settings.contentSource == .localOnly && url.contains("?") && settings.whitelistURLs.contains(url)
    }

    static func sources(_ settings: HubSettings) -> [String] {
        var sources: [String] = []
        for domain in settings.whitelistDomains {
            let host = domain.trimmingCharacters(in: .whitespaces).lowercased()
            guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }) else { continue }
            sources.append(host + ":*")
            let isIPAddress = host.allSatisfy { $0.isNumber || $0 == "." }
            if !isIPAddress { sources.append("*." + host + ":*") }
        }
        for url in settings.whitelistURLs where !url.contains("?") {
            var text = url
            if let hash = text.firstIndex(of: "#") { text = String(text[..<hash]) }
            guard let parsed = URLComponents(string: text), let scheme = parsed.scheme, parsed.host != nil else { continue }
            guard scheme == "http" || scheme == "https" else { continue }
            // Characters that would end a source expression or a directive are percent-encoded
            // (CSP decodes the path before comparing).
            text = text.replacingOccurrences(of: ";", with: "%3B").replacingOccurrences(of: ",", with: "%2C")
                .replacingOccurrences(of: " ", with: "%20").replacingOccurrences(of: "'", with: "%27")
            sources.append(text)
        }
        var seen = Set<String>()
        return sources.filter { seen.insert($0).inserted }
    }
}
