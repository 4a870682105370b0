import ArgumentParser

/// `hubhost hub ...`: the Content Hub. (This branch holds `present` and `watch`; the other hub
/// subcommands join this group when the branches are merged.)
struct HubCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "The Content Hub: present it, watch its notifications.",
        subcommands: [HubPresentCommand.self, HubWatchCommand.self])
}
