import ArgumentParser
import Foundation
import HubHostKit
import Synchronization

/// `hubhost hub ...`: the Content Hub. Each subcommand is a thin front end over HubHostKit
/// (HubEngine, ContentDelivery); add new ones to `subcommands`.
struct HubCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "The Content Hub: sync content from the content service, show its status, present it, watch its notifications.",
        subcommands: [Sync.self, Status.self, HubPresentCommand.self, HubWatchCommand.self])

    /// The host and its content delivery, or a clear error when the hub is off.
    static func delivery(_ option: ManifestOption) throws -> (HubHost, ContentDelivery) {
        let host = try option.startHost()
        guard let delivery = try host.delivery() else {
            host.shutdown()
            Output.error("the Content Hub is off (hub: enabled: false in \(host.manifest.file))")
            throw ExitCode.failed
        }
        return (host, delivery)
    }

    struct Sync: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "Fetch the service's settings and metadata; download, verify and activate a newer bundle.",
            discussion: "Shows the download's percent on stderr. Exits 1 with the reason when the sync fails (the previous bundle stays active).")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, delivery) = try HubCommand.delivery(manifestOption)
            defer { host.shutdown() }
            /// Whether a progress line is open on stderr (its subscriber runs inside `delivery.sync()`).
            final class Line: Sendable { let open = Mutex(false) }
            let line = Line()
            let token = host.notifications.subscribe { notification in
                guard notification.name == HostNotification.Name.downloadProgressChanged, let percent = notification.payload["percent"]?.plainText
                else { return }
                line.open.withLock { $0 = percent != "100" }
                FileHandle.standardError.write(Data("\rdownloading: \(percent)%\(percent == "100" ? "\n" : "")".utf8))
            }
            defer { host.notifications.unsubscribe(token) }
            let report: ContentDelivery.SyncReport
            do { report = try delivery.sync() } catch {
                Output.error("\(line.open.withLock { $0 } ? "\n" : "")hub sync failed: \(error)")
                throw ExitCode.failed
            }
            if output.json { Output.json(report) } else { print("\(report.result): \(report.message)") }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "The hub state, the active bundle and content delivery (provider, the service's modes, pilot program, last sync).",
            discussion: "Works offline: the service's settings are the last ones fetched.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, delivery) = try HubCommand.delivery(manifestOption)
            defer { host.shutdown() }
            let status = delivery.status()
            if output.json {
                Output.json(status)
                return
            }
            func date(_ ms: Int64?) -> String {
                guard let ms else { return "never" }
                return ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
            }
            let state = status.state
            print("state:")
            Output.table(["  flag", "value"], HubState.flags.map { ["  \($0.key)", "\(state[keyPath: $0.keyPath])"] })
            if let bundle = status.activeBundle {
                print("active bundle: \(bundle.version) (created \(bundle.created), source \(bundle.contentSource))")
                print("  sha256 \(bundle.sha256 ?? "unreadable")")
                print("  \(bundle.path)")
            } else {
                print("active bundle: none")
            }
            print("provider: \(status.provider ?? "none (\(status.providerProblem ?? "no content_provider"))")")
            print("content service: \(status.serviceURL ?? "not set (hub.db_service_url)")")
            let settings = status.settings
            print("delivery settings (\(status.settingsFetchedMs == nil ? "defaults: never fetched" : "fetched \(date(status.settingsFetchedMs))")):")
            print("  initialDownloadMode \(settings.initialDownloadMode.rawValue)")
            print(
                "  refreshMode         \(settings.refreshMode.rawValue)\(settings.refreshMode == .recurring ? " every \(settings.refreshInterval) s" : "")"
            )
            print("  isDisabled          \(settings.isDisabled)")
            if let program = settings.pilotProgram {
                print("  pilotProgram        \(program.id): \(program.enrolled ? "enrolled" : "not part of pilot program")")
            } else {
                print("  pilotProgram        none")
            }
            if let last = status.lastSync {
                print("last sync: \(last.result) at \(date(last.atMs)): \(last.message)")
            } else {
                print("last sync: never")
            }
        }
    }
}
