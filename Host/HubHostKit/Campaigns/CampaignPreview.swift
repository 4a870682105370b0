import Foundation

/// A campaign's message rendered as one HTML page, to see what it looks like without showing it:
/// no impression is counted and no event tracked (the caller only reads the campaign).
///
/// The page is self-contained: its one stylesheet is inline and named by its SHA-256 in the page's
/// policy (`contentSecurityPolicy`), it has no script, and the image is a `data:` URL of bytes that
/// `CampaignImageCache` fetched through the host's HTTP and cached, so it shows offline and from a
/// file as well as from `GET /v1/campaigns/{id}/preview`. The policy is the web hub's `local_only`
/// policy with nothing external, no script and only that stylesheet: stricter than the hub's.
///
/// Nothing the campaign says reaches the page unchecked: every text is HTML-escaped, a colour shows
/// only when it is `#rgb`, `#rrggbb` or `#rrggbbaa` (anything else is left out, and a note on the
/// page says so), and buttons are inert elements that name their action and URI instead of
/// following them.
public enum CampaignPreview {
    /// The message's image as the page shows it.
    public enum Image: Equatable, Sendable {
        /// The message has no image.
        case none
        /// The image's bytes, of an image type the page may show (`mimeType`, read from the bytes).
        case loaded(url: String, mimeType: String, bytes: Data)
        /// The image is not shown, and why (not allowed, not reachable, not an image, too large).
        case unavailable(url: String, reason: String)
    }

    /// A rendered page.
    public struct Page: Sendable {
        /// The whole HTML document.
        public var html: String
        /// The Content-Security-Policy the page is served with (`headers` has it too).
        public var contentSecurityPolicy: String
        /// What a server sends with the page: the policy, `X-Content-Type-Options`, `Cache-Control: no-store`.
        public var headers: [String: String]
        /// What was rendered, for a summary (`hubhost campaigns preview --json`).
        public var summary: Summary
    }

    /// What a preview showed.
    public struct Summary: Codable, Equatable, Sendable {
        /// The id of the campaign previewed (`Campaign.id`).
        public var campaignId: String
        /// The layout class: modal, full, slide-up or html.
        public var layout: String
        /// The campaign's title as given (`Campaign.title`, [contexts] included), not HTML-escaped.
        public var title: String
        /// How many buttons the page shows (all of the campaign's).
        public var buttons: Int
        /// `none`, `loaded` or `unavailable`.
        public var image: String
        /// The image's URL (the one loaded or refused); nil when the message has no image.
        public var imageURL: String?
        /// Why the image is not shown (with `image: unavailable`).
        public var imageProblem: String?
        /// What the page left out or could not show as given (an invalid colour, an HTML message's body).
        public var notes: [String]
        /// The size of the page in bytes.
        public var bytes: Int
    }

    /// The layout class of each display type (`Campaign.type`, `CampaignParser.campaignTypes`).
    public static let layouts: [Int: String] = [1: "modal", 2: "full", 3: "slide-up", 4: "html"]

    /// The page's policy: the web hub's `local_only` policy (`ContentSecurityPolicy`) without its
    /// whitelists and inline allowances: images only from the page's own origin or `data:`, the one
    /// stylesheet named by `styleHash`, no script, no form, no base, framed as `frameAncestors`
    /// allows; violations are reported where the hub's are.
    public static func contentSecurityPolicy(styleHash: String, frameAncestors: String = "'self'") -> String {
        [
            "default-src 'none'",
            "img-src 'self' data:",
            "style-src 'sha256-\(styleHash)'",
            "script-src 'none'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors \(frameAncestors)",
            "report-uri \(ContentSecurityPolicy.reportPath)"
        ].joined(separator: "; ")
    }

    /// Whether `text` is a colour the page may use as given: `#` and 3, 6 or 8 hex digits.
    public static func isColor(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard [4, 7, 9].contains(utf8.count), utf8[0] == UInt8(ascii: "#") else { return false }
        return utf8.dropFirst().allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Renders `campaign`'s message with `image` (see `CampaignImageCache.image(for:)`). Long: the
    /// page is written in one pass, top to bottom, as it will read.
    public static func render(_ campaign: Campaign, image: Image, frameAncestors: String = "'self'") -> Page {
        var notes: [String] = []
        let layout = layouts[campaign.type] ?? "modal"
        if campaign.type == 4 { notes.append("an HTML message is previewed as text: its body is shown escaped, never run") }

        // The colours: each one checked, an invalid one left out with a note.
        func color(_ value: String?, _ field: String) -> String? {
            guard let value else { return nil }
            if isColor(value) { return value }
            notes.append("\(field) \(quoted(value)) is not a colour (#rgb, #rrggbb or #rrggbbaa): the default is shown")
            return nil
        }
        let colors = campaign.colors ?? Campaign.Colors()
        var rules: [String] = []
        if let frame = color(colors.frame, "frameColor") { rules.append(".screen{background:\(frame)}") }
        if let background = color(colors.background, "backgroundColor") { rules.append("#message{background:\(background)}") }
        if let title = color(colors.title, "titleColor") { rules.append("#message-title{color:\(title)}") }
        if let header = color(colors.header, "headerColor") { rules.append("#message-header{color:\(header)}") }
        if let body = color(colors.body, "messageBodyColor") { rules.append("#message-body{color:\(body)}") }
        for (index, button) in campaign.buttons.enumerated() {
            let n = index + 1
            if let text = color(button.textColor, "button \(n) buttonTextColor") { rules.append("#button-\(n){color:\(text)}") }
            if let fill = color(button.backgroundColor, "button \(n) buttonBackgroundColor") {
                rules.append("#button-\(n){background:\(fill);border-color:\(fill)}")
            }
        }
        let style = stylesheet + rules.joined(separator: "\n") + "\n"
        let styleHash = Data(SHA256.digest(of: Data(style.utf8))).base64EncodedString()
        let policy = contentSecurityPolicy(styleHash: styleHash, frameAncestors: frameAncestors)

        var html = """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Preview: \(HTMLEscape.escape(campaign.title))</title>
            <style>\(style)</style>
            </head>
            <body class="campaign-preview">

            """
        let direction = CampaignParser.slideDirections[Int64(campaign.slideFrom ?? 1)] ?? "bottom"
        let layoutClasses = "layout-\(layout)" + (layout == "slide-up" ? " slide-from-\(direction)" : "")
        html += #"<div class="screen \#(layoutClasses)" id="screen">"# + "\n"
        html +=
            #"<section id="message" class="message \#(layoutClasses)" data-campaign-id="\#(HTMLEscape.escape(campaign.id))" data-layout="\#(layout)">"#
            + "\n"
        switch image {
        case .none:
            break
        case .loaded(let url, let mimeType, let bytes):
            html +=
                #"<img id="message-image" alt="" data-src="\#(HTMLEscape.escape(url))" src="data:\#(mimeType);base64,\#(bytes.base64EncodedString())">"#
                + "\n"
        case .unavailable(let url, let reason):
            html +=
                #"<div id="message-image" class="image-unavailable" data-src="\#(HTMLEscape.escape(url))"><span>Image not shown: \#(HTMLEscape.escape(reason))</span></div>"#
                + "\n"
        }
        if let header = campaign.header, !header.isEmpty { html += #"<p id="message-header">\#(HTMLEscape.escape(header))</p>"# + "\n" }
        html += #"<h1 id="message-title">\#(HTMLEscape.escape(campaign.title))</h1>"# + "\n"
        if let body = campaign.body, !body.isEmpty { html += #"<p id="message-body">\#(HTMLEscape.escape(body))</p>"# + "\n" }
        if !campaign.buttons.isEmpty {
            html += #"<div id="message-buttons">"# + "\n"
            for (index, button) in campaign.buttons.enumerated() {
                let action = CampaignParser.buttonActions[Int64(button.action)] ?? "none"
                let target = button.uri.map { ": " + HTMLEscape.escape($0) } ?? ""
                html +=
                    #"<span class="button" role="button" aria-disabled="true" id="button-\#(index + 1)" data-action="\#(action)" data-uri="\#(HTMLEscape.escape(button.uri ?? ""))">\#(HTMLEscape.escape(button.text))</span>"#
                    + "\n"
                html += #"<small class="button-action" id="button-\#(index + 1)-action">\#(action)\#(target)</small>"# + "\n"
            }
            html += "</div>\n"
        }
        if campaign.optOut { html += #"<p id="message-opt-out"><span class="box"></span> Do not show this again</p>"# + "\n" }
        html += "</section>\n</div>\n"

        // What the preview is, beside the message.
        html += #"<aside id="preview-notes">"# + "\n"
        html +=
            "<p>Preview of campaign <code>\(HTMLEscape.escape(campaign.id))</code>: \(layout) (type \(campaign.type))"
            + (campaign.contexts.isEmpty
                ? "" : ", contexts \(campaign.contexts.map { "<code>\(HTMLEscape.escape($0))</code>" }.joined(separator: ", "))")
            + ". No impression is counted.</p>\n"
        if !notes.isEmpty {
            html += "<ul>\n" + notes.map { "<li>\(HTMLEscape.escape($0))</li>\n" }.joined() + "</ul>\n"
        }
        html += "</aside>\n</body>\n</html>\n"

        let summary: Summary
        switch image {
        case .none:
            summary = Summary(
                campaignId: campaign.id, layout: layout, title: campaign.title, buttons: campaign.buttons.count, image: "none",
                imageURL: campaign.imageURL, imageProblem: nil, notes: notes, bytes: html.utf8.count)
        case .loaded(let url, _, _):
            summary = Summary(
                campaignId: campaign.id, layout: layout, title: campaign.title, buttons: campaign.buttons.count, image: "loaded",
                imageURL: url, imageProblem: nil, notes: notes, bytes: html.utf8.count)
        case .unavailable(let url, let reason):
            summary = Summary(
                campaignId: campaign.id, layout: layout, title: campaign.title, buttons: campaign.buttons.count, image: "unavailable",
                imageURL: url, imageProblem: reason, notes: notes, bytes: html.utf8.count)
        }
        let headers = ["Content-Security-Policy": policy, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"]
        return Page(html: html, contentSecurityPolicy: policy, headers: headers, summary: summary)
    }

    /// `value` quoted for a note, cut at 80 characters.
    private static func quoted(_ value: String) -> String {
        "'" + (value.count > 80 ? String(value.prefix(80)) + "…" : value) + "'"
    }

    /// The page's stylesheet before the campaign's colours: a phone-sized screen with the message
    /// placed by its layout class.
    static let stylesheet = """
        *{box-sizing:border-box}
        body{margin:0;padding:16px;background:#dcdce2;font:15px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222}
        .screen{position:relative;width:360px;height:640px;overflow:hidden;border-radius:24px;background:rgba(0,0,0,.45);box-shadow:0 2px 12px rgba(0,0,0,.3)}
        .message{position:absolute;display:flex;flex-direction:column;gap:8px;padding:16px;background:#fff;color:#222;overflow:auto}
        .message.layout-modal,.message.layout-html{left:24px;right:24px;top:50%;transform:translateY(-50%);max-height:560px;border-radius:12px}
        .message.layout-full{inset:0}
        .message.layout-slide-up{left:0;right:0;bottom:0;max-height:50%;border-radius:12px 12px 0 0}
        .message.layout-slide-up.slide-from-top{top:0;bottom:auto;border-radius:0 0 12px 12px}
        #message-image{display:block;width:100%;height:140px;object-fit:cover;border-radius:8px}
        #message-image.image-unavailable{display:flex;align-items:center;justify-content:center;padding:8px;background:#eee;color:#555;border:1px dashed #999;font-size:13px;text-align:center}
        #message-header{margin:0;font-size:13px;font-weight:600;text-transform:uppercase;letter-spacing:.04em}
        #message-title{margin:0;font-size:22px;line-height:1.2;font-weight:800}
        #message-body{margin:0;white-space:pre-wrap}
        #message-buttons{display:flex;flex-direction:column;gap:4px}
        .button{display:block;padding:10px 12px;border:2px solid #1a73e8;border-radius:8px;background:#1a73e8;color:#fff;font-weight:700;text-align:center}
        .button-action{color:#666;font-size:12px;word-break:break-all;margin-bottom:4px}
        #message-opt-out{margin:0;font-size:13px}
        #message-opt-out .box{display:inline-block;width:12px;height:12px;border:1px solid #666;vertical-align:middle}
        #preview-notes{max-width:360px;margin-top:12px;font-size:13px;color:#333;word-break:break-word}

        """
}
