import ArgumentParser

/// `hubhost hub ...`: the Content Hub. (This branch has only `watch`; the other hub commands are
/// added beside it.)
struct HubCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "The Content Hub.",
        subcommands: [HubWatchCommand.self])
}
