import ArgumentParser
import Foundation
import HubHostKit

/// Opens the host and its Content Hub engine for the hub's commands (users, present, local
/// notifications), or exits 1 saying the hub is disabled.
enum HubEngineAccess {
    static func open(_ option: ManifestOption, preview: BundlePreviewOption? = nil) throws -> (HubHost, HubEngine) {
        let host = try option.startHost()
        let hub: HubEngine?
        do { hub = try host.hub() } catch {
            host.shutdown()
            Output.error("cannot open the Content Hub: \(error)")
            throw ExitCode.failed
        }
        guard let hub else {
            host.shutdown()
            Output.error("the Content Hub is disabled in \(host.manifest.file) (hub: enabled: false)")
            throw ExitCode.failed
        }
        if let path = preview?.bundle {
            do { hub.activate(try ContentBundle(path: path)) } catch {
                host.shutdown()
                Output.error("\(error)")
                throw ExitCode.failed
            }
        }
        return (host, hub)
    }
}

/// `--bundle FILE`: use this bundle file instead of the active one, for content authors previewing
/// a bundle before it is signed and published. The file is read as it is (not verified) and is not
/// stored or activated beyond this one command.
struct BundlePreviewOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Preview this bundle file instead of the active bundle (not verified, not stored).",
            valueName: "file"))
    var bundle: String?
}
