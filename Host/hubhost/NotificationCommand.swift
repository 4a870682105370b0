import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost notifications received|opened`: a push notification's payload (its events and its
/// CurrentCampaign). `hubhost notification received|opened`, the old name, stays as a hidden alias.
struct NotificationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notification",
        abstract: "The old name of `hubhost notifications received|opened`.",
        shouldDisplay: false,
        subcommands: [Received.self, Opened.self])

    /// The payload and the options both actions take.
    struct Payload: ParsableArguments {
        @Argument(help: ArgumentHelp("Payload entries (instead of a JSON object on stdin).", valueName: "key=value"))
        var entries: [String] = []

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func handle(opened: Bool) throws {
            var payload: [String: String] = [:]
            if entries.isEmpty {
                let data = FileHandle.standardInput.readDataToEndOfFile()
                guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw ValidationError("expected a JSON object on stdin, or key=value arguments")
                }
                for (key, value) in object { payload[key] = "\(value)" }
            } else {
                for entry in entries {
                    guard let equals = entry.firstIndex(of: "=") else { throw ValidationError("\(entry): expected key=value") }
                    payload[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
                }
            }
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let event = try host.events().notification(opened: opened, payload: payload)
            if output.json { Output.json(EventView(event)) } else { EventView(event).printText() }
        }
    }

    struct Received: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "received",
            abstract: "A push notification was received: track it, and take its CurrentCampaign (JSON object on stdin, or key=value arguments).")

        @OptionGroup var payload: Payload

        func run() throws { try payload.handle(opened: false) }
    }

    struct Opened: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "opened",
            abstract: "A push notification was opened: track it, and take its CurrentCampaign (JSON object on stdin, or key=value arguments).")

        @OptionGroup var payload: Payload

        func run() throws { try payload.handle(opened: true) }
    }
}
