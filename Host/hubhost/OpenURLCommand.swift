import ArgumentParser
import Foundation
import HubHostKit

struct OpenURLCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-url",
        abstract: "Handle an opened URL (deep link): track it and take its CurrentCampaign parameter.")

    @Argument(help: "The URL.")
    var url: String

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    func run() throws {
        let host = try manifestOption.startHost()
        defer { host.shutdown() }
        let (event, note) = try host.events().openURL(url)
        if output.json { Output.json(EventView(event)) } else { EventView(event).printText() }
        if let note { Output.error(note) }
    }
}
