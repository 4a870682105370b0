import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost hub present`: what presenting the Content Hub shows now, tailored for the active user
/// (or a tags override), or the item a URI opens.
struct HubPresentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "present",
        abstract: "Print the hub that would be presented, with its channels and their articles in tailored order.",
        discussion: """
            Without options the active user's tag usage counts choose the hub (no user or no tags: the \
            first hub in bundle order) and order each channel's articles. --tags replaces the user's \
            tags for this presentation. --uri opens an item instead:
              zbimdb://hub/<id>, zbimdb://channel/<id>, zbimdb://article/<id>
              myapp://article/<id>   a scheme in hub.custom_url_schemes
              https://example.com/a  an article's source URL (app indexing)
            Tracks a "Hub Presented" event (with --entry-point, once). Exits 1 when nothing matches.
            """)

    @Option(help: ArgumentHelp("Tags that replace the active user's for this presentation, comma separated.", valueName: "a,b"))
    var tags: String?

    @Option(help: ArgumentHelp("Open this item: a zbimdb:// URI, a custom-scheme deep link, or an article's source URL.", valueName: "uri"))
    var uri: String?

    @Option(name: .customLong("entry-point"), help: ArgumentHelp("The entry point recorded in this presentation's metrics.", valueName: "id"))
    var entryPoint: String?

    @OptionGroup var preview: BundlePreviewOption
    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    func validate() throws {
        if tags != nil && uri != nil { throw ValidationError("give --tags or --uri, not both") }
    }

    func run() throws {
        let (host, hub) = try HubEngineAccess.open(manifestOption, preview: preview)
        defer { host.shutdown() }
        if let entryPoint { hub.setEntryPoint(entryPoint) }
        let presentation: Presentation
        do {
            presentation = try hub.present(tags: tags.map { UsersCommand.splitTags($0) }, uri: uri)
        } catch let error as HubEngine.PresentError {
            Output.error("cannot present: \(error)")
            throw ExitCode.failed
        }
        if output.json {
            Output.json(presentation)
            return
        }
        print("hub: \(presentation.hubID)  \"\(presentation.hubTitle)\"\(HubPresentCommand.tagList(presentation.hubTags))")
        if let target = presentation.target { print("opens: \(target)") }
        for channel in presentation.channels {
            print("  channel: \(channel.id)  \"\(channel.title)\"\(HubPresentCommand.tagList(channel.tags))")
            for (index, article) in channel.articles.enumerated() {
                print("    \(index + 1). \(article.id)  \"\(article.title)\"\(HubPresentCommand.tagList(article.tags))")
            }
        }
    }

    static func tagList(_ tags: [String]) -> String { tags.isEmpty ? "" : "  [\(tags.joined(separator: ", "))]" }
}
