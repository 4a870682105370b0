import Foundation

/// The parts of hub pages that do not come from a bundle: HTML escaping, the status views
/// (checking, downloading, error) with their replaceable templates, hubhost's stylesheet and script.
package enum HubPageTemplates {
    /// Escapes text for HTML element content and double- or single-quoted attribute values.
    package static func escape(_ text: String) -> String { HTMLEscape.escape(text) }

    /// A status view: what the hub shows while it has no content to present.
    package enum Status: String, CaseIterable, Sendable {
        case checking, downloading, error
    }

    /// `<data_dir>/hub/templates/<status>.html` when it exists, else the built-in view, with
    /// `{{message}}` and `{{percent}}` replaced by the escaped values.
    package static func statusView(
        _ status: Status, message: String, percent: Int?, templatesDirectory: String,
        colorScheme: HubSettings.ColorScheme, chrome: String
    ) -> String {
        let file = (templatesDirectory as NSString).appendingPathComponent(status.rawValue + ".html")
        let template = (try? String(contentsOfFile: file, encoding: .utf8)) ?? builtInStatusView(status, colorScheme: colorScheme, chrome: chrome)
        return template.replacingOccurrences(of: "{{message}}", with: escape(message))
            .replacingOccurrences(of: "{{percent}}", with: percent.map(String.init) ?? "")
    }

    static func builtInStatusView(_ status: Status, colorScheme: HubSettings.ColorScheme, chrome: String) -> String {
        let body: String
        switch status {
        case .checking:
            body =
                #"<div class="hubhost-status" id="hubhost-status" data-status="checking"><div class="hubhost-spinner"></div><p>{{message}}</p></div>"#
        case .downloading:
            body =
                #"<div class="hubhost-status" id="hubhost-status" data-status="downloading" data-percent="{{percent}}"><p>{{message}}</p><progress max="100" value="{{percent}}"></progress><p class="hubhost-percent">{{percent}}%</p></div>"#
        case .error:
            body = #"<div class="hubhost-status hubhost-error" id="hubhost-status" data-status="error"><p>{{message}}</p></div>"#
        }
        // Checking and downloading refresh themselves (presenting again) until content is ready.
        let refresh = status == .error ? "" : #"<meta http-equiv="refresh" content="2">"#
        return """
            <!DOCTYPE html>
            <html lang="en" class="scheme-\(colorScheme.rawValue)"><head><meta charset="utf-8">\(refresh)
            <meta name="viewport" content="width=device-width, initial-scale=1"><title>Content Hub</title>
            <link rel="stylesheet" href="/hub/hubhost.css"></head>
            <body class="hubhost-status-page">\(chrome)<main>\(body)</main></body></html>
            """
    }

    /// `/hub/hubhost.css`: the chrome, the page layout and both color schemes (the `<html>`
    /// element's class `scheme-dark` or `scheme-light`). Bundle-independent.
    package static let stylesheet = """
        html.scheme-dark { --bg: #121417; --fg: #e8eaed; --muted: #9aa0a6; --card: #1e2126; --accent: #8ab4f8; --line: #2e3238; color-scheme: dark; }
        html.scheme-light { --bg: #ffffff; --fg: #202124; --muted: #5f6368; --card: #f1f3f4; --accent: #1a73e8; --line: #dadce0; color-scheme: light; }
        html, body { margin: 0; padding: 0; background: var(--bg); color: var(--fg); font-family: system-ui, -apple-system, "Segoe UI", sans-serif; line-height: 1.5; }
        a { color: var(--accent); text-decoration: none; }
        a:hover { text-decoration: underline; }
        .hubhost-chrome { display: flex; gap: .5rem; align-items: center; padding: .5rem 1rem; border-bottom: 1px solid var(--line); background: var(--card); position: sticky; top: 0; }
        .hubhost-chrome .hubhost-button { display: inline-block; padding: .25rem .75rem; border: 1px solid var(--line); border-radius: 6px; color: var(--fg); background: var(--bg); }
        .hubhost-chrome .hubhost-disabled { opacity: .4; pointer-events: none; }
        .hubhost-chrome .hubhost-spacer { flex: 1; }
        main { max-width: 52rem; margin: 0 auto; padding: 1rem; }
        h1 { font-size: 1.8rem; margin: .5rem 0 1rem; }
        .hubhost-channel { background: var(--card); border-radius: 10px; padding: .75rem 1rem; margin-bottom: 1rem; }
        .hubhost-channel h2 { font-size: 1.2rem; margin: 0 0 .5rem; }
        .hubhost-articles { margin: 0; padding-left: 1.25rem; }
        .hubhost-articles li { padding: .2rem 0; }
        .hubhost-breadcrumb { color: var(--muted); font-size: .9rem; }
        .hubhost-article-body img { max-width: 100%; }
        .hubhost-status { text-align: center; margin-top: 20vh; color: var(--muted); }
        .hubhost-status progress { width: 60%; }
        .hubhost-error { color: #f28b82; }
        .hubhost-spinner { width: 2rem; height: 2rem; margin: 0 auto; border: 3px solid var(--line); border-top-color: var(--accent); border-radius: 50%; animation: hubhost-spin 1s linear infinite; }
        @keyframes hubhost-spin { to { transform: rotate(360deg); } }
        """

    /// `/hub/hubhost.js`: a click on a link to an app action is sent as a same-origin POST to
    /// `/hub/app-action`, the only way that route acts (a GET could come from any other site: an
    /// `<img>` or a link there). The link is either rewritten at render time to
    /// `/hub/app-action?url=...` or, when a page's own scripts create it at runtime (render-time
    /// rewriting cannot see those), still points at a registered custom scheme, which the browser
    /// would otherwise hand to the operating system. The schemes are in `<body data-app-schemes="...">`.
    /// `referrerPolicy: 'same-origin'` keeps the request's Origin the page's own even when the
    /// page asks for no referrer (which would send `Origin: null`, refused as foreign).
    package static let script = """
        (function () {
          var schemes = (document.body.getAttribute('data-app-schemes') || '').split(' ').filter(Boolean);
          document.addEventListener('click', function (event) {
            var link = event.target && event.target.closest ? event.target.closest('a[href]') : null;
            if (!link) return;
            var href = link.getAttribute('href');
            var action;
            if (href.indexOf('/hub/app-action?') === 0) {
              action = href;
            } else {
              var match = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(href);
              if (!match || schemes.indexOf(match[1].toLowerCase()) < 0) return;
              action = '/hub/app-action?url=' + encodeURIComponent(href);
            }
            event.preventDefault();
            fetch(action, {method: 'POST', credentials: 'same-origin', referrerPolicy: 'same-origin'});
          }, true);
        })();
        """
}
