import ArgumentParser
import Foundation
import HubHostKit

struct MessagesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messages",
        abstract: "Ready in-app messages, one at a time: next, impression, close.",
        subcommands: [Next.self, Impression.self, Close.self])

    struct Next: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The next message that may show now (it stays current until shown or closed).",
            discussion: "Exits 1 when no message is ready.")

        @Option(name: .customLong("context"), help: ArgumentHelp("A context allowed now (repeatable).", valueName: "name"))
        var contexts: [String] = []

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            guard let message = engine.next(allowedContexts: contexts) else {
                if output.json { print("null") } else { print("no message is ready") }
                throw ExitCode.failed
            }
            if output.json {
                Output.json(message)
            } else {
                print("\(message.id)  \(message.title)")
                if let header = message.header { print("  \(header)") }
                if let body = message.body { print("  \(body)") }
            }
        }
    }

    struct Impression: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Report that a message was shown: it counts one impression.")

        @Argument(help: "The campaign id.")
        var id: String

        @OptionGroup var manifestOption: ManifestOption

        func run() throws { try CampaignsCommand.impression(id, manifestOption) }
    }

    struct Close: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Close the current message without counting an impression.")

        @Flag(name: .customLong("clear-queued-campaigns"), help: "Also remove every queued message.")
        var clearQueuedCampaigns = false

        @OptionGroup var manifestOption: ManifestOption

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            engine.close(clearQueue: clearQueuedCampaigns)
        }
    }
}
