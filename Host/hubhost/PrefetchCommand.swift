import ArgumentParser
import Foundation
import HubHostKit
import Synchronization

/// `hubhost prefetch ...`: the content prefetch engine (HubHostKit/Prefetch). Each subcommand is
/// a thin front end over PrefetchEngine; the HTTP routes (Server/PrefetchRoutes.swift) are the
/// same operations.
struct PrefetchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Content prefetch: register with the catalog service, sync the catalog, download, pause, delete and list items.",
        discussion: """
            Works on the catalog in the data directory (prefetch.sqlite), shared with a running hubhost serve: \
            a download asked for here is done by the server's queue, or by this command with --wait.
            """,
        subcommands: [
            Register.self, Status.self, Sync.self, Items.self, Item.self, Download.self, Pause.self, Resume.self,
            Cancel.self, Fill.self, Delete.self, Save.self, Unsave.self, Lock.self, Unlock.self, Consume.self, Purge.self,
            Import.self, Lookup.self, Policy.self, Watch.self, PlayURL.self,
            Categories.self, Sources.self
        ])

    /// Options every prefetch subcommand takes.
    struct Common: ParsableArguments {
        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag
        @Option(help: ArgumentHelp("The licence key; wins over prefetch.license and HUBHOST_PREFETCH_CONFIG.", valueName: "key"))
        var license: String?

        /// The host and its prefetch engine, or exit 1 saying it is off.
        func open() throws -> (HubHost, PrefetchEngine) {
            let host = try manifestOption.startHost()
            let engine: PrefetchEngine?
            do { engine = try host.prefetch(license: license) } catch {
                host.shutdown()
                Output.error("cannot open the prefetch engine: \(error)")
                throw ExitCode.failed
            }
            guard let engine else {
                host.shutdown()
                Output.error("content prefetch is off (prefetch: enabled: false in \(host.manifest.file))")
                throw ExitCode.failed
            }
            return (host, engine)
        }
    }

    /// Prints per-item answers; exits 1 when any was refused.
    static func report(_ answers: [PrefetchEngine.Answer], json: Bool) throws {
        if json {
            Output.json(answers)
        } else {
            Output.table(
                ["id", "result", "state", "reason"],
                answers.map {
                    [$0.id, $0.accepted ? "ok" : "refused", $0.state?.rawValue ?? "-", $0.reason ?? ""]
                })
        }
        if answers.contains(where: { !$0.accepted }) { throw ExitCode.failed }
    }

    static func date(_ ms: Int64?) -> String {
        guard let ms else { return "never" }
        return ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    struct Register: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "register",
            abstract: "Register with the catalog service now (licence and device id); receives the server's policy defaults.",
            discussion: "Exits 1 with the reason when the service refuses or cannot be reached.")
        @OptionGroup var common: Common

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            do { try engine.register() } catch {
                Output.error("prefetch register failed: \(error)")
                throw ExitCode.failed
            }
            if common.output.json { Output.json(try engine.status()) } else { print(engine.serviceState.rawValue) }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "The service state, which licence source won, the policy in force and item counts per state.")
        @OptionGroup var common: Common

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            let status = try engine.status()
            if common.output.json {
                Output.json(status)
                return
            }
            let failure = status.lastFailure.map { why in
                let item = status.lastFailureItem.map { "item \($0), " } ?? ""
                return " (last failure: \(why) (\(item)\(PrefetchCommand.date(status.lastFailureMs))))"
            }
            print("service state: \(status.serviceState.rawValue)\(failure ?? "")")
            print("licence: \(status.licenseSource.rawValue)\(status.licenseProblem.map { " (\($0))" } ?? "")")
            print("device id: \(status.deviceId)")
            print("provider: \(status.provider ?? "none (\(status.providerProblem ?? "no content_provider"))")")
            print("last sync: \(PrefetchCommand.date(status.lastSyncMs))")
            print("download allowed: \(status.downloadAllowed) (\(status.downloadPolicyStatus))")
            print("item download behavior: \(status.itemDownloadBehavior.rawValue)")
            print("network selection: \(status.networkSelection.rawValue)\(status.networkSelectionOverride == nil ? "" : " (override)")")
            print("max concurrent downloads: \(status.maxConcurrentDownloads)")
            print("items:")
            Output.table(["  state", "count"], PrefetchItemState.allCases.map { ["  \($0.rawValue)", "\(status.items[$0.rawValue] ?? 0)"] })
        }
    }

    struct Sync: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "Fetch the catalog's changes since the last sync (registering first when needed).",
            discussion: "Exits 1 with the reason when the service fails; the catalog keeps what it had.")
        @OptionGroup var common: Common

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            do {
                if engine.serviceState == .notRegistered { try engine.register() }
                let report = try engine.sync()
                try engine.round()
                if common.output.json {
                    Output.json(report)
                } else {
                    print(
                        "\(report.pages) page(s): \(report.discovered.count) discovered, \(report.updated.count) updated, \(report.evicted.count) evicted"
                    )
                }
            } catch {
                Output.error("prefetch sync failed: \(error)")
                throw ExitCode.failed
            }
        }
    }

    struct Items: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "items",
            abstract: "List items, filtered and sorted (deleted items only with --state deleted).",
            discussion: "Sort fields: \(PrefetchItemFilter.Field.allCases.map(\.rawValue).joined(separator: ", ")); add :desc to reverse.")
        @OptionGroup var common: Common
        @OptionGroup var filterOptions: PrefetchItemFilterOptions

        func filter() throws -> PrefetchItemFilter { try filterOptions.filter() }

        func validate() throws { _ = try filter() }

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            let items = try engine.items(try filter())
            if common.output.json {
                Output.json(items)
                return
            }
            Output.table(
                ["id", "state", "progress", "reason", "title"],
                items.map { item in
                    [
                        item.uniqueId, item.state.rawValue, "\(item.bytesDownloaded)/\(item.size)", item.waitReason ?? item.downloadError ?? "",
                        item.title
                    ]
                })
        }
    }

    struct Item: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "item", abstract: "Show one item with its files.")
        @OptionGroup var common: Common
        @Argument(help: "The item's uniqueId.") var id: String

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            guard let item = try engine.item(id) else {
                Output.error("no item '\(id)' in the catalog")
                throw ExitCode.failed
            }
            if common.output.json {
                Output.json(item)
                return
            }
            print("\(item.uniqueId): \(item.title)")
            print(
                "  state \(item.state.rawValue)\(item.waitReason.map { " (\($0))" } ?? "")\(item.downloadError.map { ", last error: \($0)" } ?? "")")
            print("  contentId \(item.contentId), source \(item.sourceName), categories \(item.categories.joined(separator: ", "))")
            print("  \(item.bytesDownloaded) of \(item.size) bytes; saved \(item.saved), locked \(item.locked), viewed \(item.viewed)")
            for file in item.files {
                print("  file \(file.index) \(file.role): \(file.done ? "cached" : "\(file.bytesDownloaded) bytes") \(file.localPath) <- \(file.url)")
            }
        }
    }

    struct Download: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "download",
            abstract: "Queue items for download ahead of policy-driven ones (also resumes paused and failed items).",
            discussion: """
                Refused, with the reason, for cached, deleted and downloading items (exit status 1). With --wait the \
                command downloads in this process until each item is cached, failed, paused or deleted, showing a \
                progress bar on a terminal and percent lines otherwise; exit status 1 when one did not end cached \
                (or partially_cached, with --partial-seconds or --partial-bytes). A partial download stops after the \
                start of the main file; a later download without those options resumes it by Range to cached.
                """)
        @OptionGroup var common: Common
        @Argument(help: "Item uniqueIds.") var ids: [String]
        @Option(help: "Set the items' downloadBehavior: full_auto, thumbnail_only or none.") var behavior: String?
        @Option(
            help:
                "Download only the first N seconds of each item's main file (videoPartialDownloadLength; needs the catalog's duration and size), or of an HLS item's segments (by #EXTINF): the item ends partially_cached."
        )
        var partialSeconds: Double?
        @Option(help: "Download only the first N bytes of each item's main file: the item ends partially_cached.")
        var partialBytes: Int64?
        @Flag(help: "Wait for the downloads to end.") var wait = false
        @Option(help: "With --wait: give up after this many seconds.") var timeout: Double = 3600

        func validate() throws {
            if ids.isEmpty { throw ValidationError("give at least one item id") }
            if let behavior, PrefetchSettings.DownloadBehavior(rawValue: behavior) == nil {
                throw ValidationError("unknown behavior '\(behavior)'; expected full_auto, thumbnail_only or none")
            }
            if !(timeout > 0 && timeout <= 86_400 * 7) { throw ValidationError("--timeout must be between 0 and 604800 seconds") }
            if partialSeconds != nil && partialBytes != nil { throw ValidationError("give --partial-seconds or --partial-bytes, not both") }
            do { _ = try partial?.validated() } catch { throw ValidationError("\(error)") }
        }

        var partial: PrefetchPartialLength? { partialBytes.map(PrefetchPartialLength.bytes) ?? partialSeconds.map(PrefetchPartialLength.seconds) }

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            let answers = try engine.download(ids, behavior: behavior.flatMap(PrefetchSettings.DownloadBehavior.init(rawValue:)), partial: partial)
            guard wait else {
                try PrefetchCommand.report(answers, json: common.output.json)
                return
            }
            let waitFor = answers.filter { $0.accepted || $0.state == .downloading }.map(\.id)
            let terminal = isatty(2) == 1
            /// The task's result and the last percent printed per item (its progress callbacks run in turn).
            final class Box: Sendable {
                let result = Mutex<Result<[PrefetchItem], Error>>(.success([]))
                let lastPercent = Mutex<[String: Int]>([:])
            }
            let box = Box()
            let done = DispatchSemaphore(value: 0)
            let timeout = self.timeout
            let json = common.output.json
            Task {
                do {
                    let downloaded = try await engine.waitForDownloads(waitFor, timeout: timeout) { items in
                        guard !json else { return }
                        for item in items {
                            let percent =
                                item.size > 0 ? Int(min(100, item.bytesDownloaded * 100 / max(1, item.size))) : (item.state == .cached ? 100 : 0)
                            let changed = box.lastPercent.withLock { last in
                                defer { last[item.uniqueId] = percent }
                                return last[item.uniqueId] != percent
                            }
                            guard changed else { continue }
                            if terminal {
                                let bar = String(repeating: "#", count: percent / 5) + String(repeating: ".", count: 20 - percent / 5)
                                FileHandle.standardError.write(Data("\r\(item.uniqueId) [\(bar)] \(percent)%".utf8))
                            } else {
                                FileHandle.standardError.write(Data("\(item.uniqueId) \(percent)%\n".utf8))
                            }
                        }
                    }
                    box.result.withLock { $0 = .success(downloaded) }
                } catch { box.result.withLock { $0 = .failure(error) } }
                done.signal()
            }
            done.wait()
            if terminal && !json { FileHandle.standardError.write(Data("\n".utf8)) }
            let items: [PrefetchItem]
            do { items = try box.result.withLock { $0 }.get() } catch {
                Output.error("prefetch download failed: \(error)")
                throw ExitCode.failed
            }
            if json {
                Output.json(items)
            } else {
                Output.table(
                    ["id", "state", "bytes", "reason"],
                    items.map {
                        [$0.uniqueId, $0.state.rawValue, "\($0.bytesDownloaded)/\($0.size)", $0.downloadError ?? $0.waitReason ?? ""]
                    })
            }
            let wanted: Set<PrefetchItemState> = partial == nil ? [.cached] : [.cached, .partiallyCached]
            if answers.contains(where: { !$0.accepted }) || items.contains(where: { !wanted.contains($0.state) }) { throw ExitCode.failed }
        }
    }

    struct Consume: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "consume",
            abstract: "Record a consumption (recordConsumption): the item is marked viewed and a 'Prefetch Consumption' event is tracked.")
        @OptionGroup var common: Common
        @Argument(help: "The item's uniqueId.") var id: String
        @Option(help: "Start position in seconds.") var start: Double
        @Option(help: "End position in seconds.") var end: Double

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            do {
                let record = try engine.recordConsumption(id, start: start, end: end)
                if common.output.json { Output.json(record) } else { print("recorded \(id): \(start)-\(end) s") }
            } catch let error as PrefetchError {
                Output.error("prefetch consume: \(error)")
                throw ExitCode.failed
            }
        }
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import items (addDownloadedItem) from a JSON file: one object or an array, with the PCD SDK's VocImportFileMetadata keys.",
            discussion:
                "DownloadStatus FullyDownloaded copies FilePath in (Cached), NewlyAdding queues a download of ContentUrl, PartiallyDownloaded imports the metadata only. Exit 1 when one was refused."
        )
        @OptionGroup var common: Common
        @Argument(help: "The JSON file.") var file: String

        func run() throws {
            let data: Data
            do { data = try Data(contentsOf: URL(fileURLWithPath: file)) } catch {
                Output.error("cannot read \(file): \(error.localizedDescription)")
                throw ExitCode.failed
            }
            let list: [PrefetchImportMetadata]
            do {
                if let many = try? JSONDecoder().decode([PrefetchImportMetadata].self, from: data) {
                    list = many
                } else {
                    list = [try JSONDecoder().decode(PrefetchImportMetadata.self, from: data)]
                }
            } catch {
                Output.error("\(file): not import metadata: \(error)")
                throw ExitCode.failed
            }
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            let answers = list.map { metadata -> PrefetchEngine.Answer in
                do {
                    let item = try engine.addDownloadedItem(metadata)
                    return PrefetchEngine.Answer(id: item.uniqueId, accepted: true, reason: nil, state: item.state)
                } catch {
                    return PrefetchEngine.Answer(id: "\(metadata.provider):\(metadata.contentId)", accepted: false, reason: "\(error)", state: nil)
                }
            }
            try PrefetchCommand.report(answers, json: common.output.json)
        }
    }

    struct Lookup: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lookup",
            abstract: "Items of a source by contentId; those not in the catalog are asked of the catalog service (3 attempts) and join it.",
            discussion: "Exit 1 when some contentIds are unknown to the catalog and the service (listed on stderr).")
        @OptionGroup var common: Common
        @Option(help: "The source (provider) name.") var source: String
        @Argument(help: "contentIds.") var contentIds: [String]

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            let result: PrefetchEngine.LookupResult
            do { result = try engine.lookup(contentIds: contentIds, source: source) } catch {
                Output.error("prefetch lookup: \(error)")
                throw ExitCode.failed
            }
            if common.output.json {
                Output.json(result)
            } else {
                Output.table(["id", "contentId", "state", "title"], result.items.map { [$0.uniqueId, $0.contentId, $0.state.rawValue, $0.title] })
            }
            if !result.missing.isEmpty {
                Output.error("not found: \(result.missing.joined(separator: ", "))")
                throw ExitCode.failed
            }
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "purge",
            abstract:
                "Run the purge rules now: expired items, then under storage pressure or above cache_size_limit consumed before unconsumed, least recently used first; never saved or locked items."
        )
        @OptionGroup var common: Common

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            let report = try engine.purge()
            if common.output.json {
                Output.json(report)
            } else {
                print("\(report.evicted.count) item(s) evicted, \(report.freedBytes) bytes freed\(report.pressure.map { " (\($0))" } ?? "")")
            }
        }
    }

    struct Policy: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "policy",
            abstract: "Show the download policy in force, or set the network selection override (wifi, cellular, both, or default to clear it).")
        @OptionGroup var common: Common
        @Option(help: "wifi, cellular, both, or default (clears the override).") var network: String?

        func validate() throws {
            if let network, network != "default", PrefetchSettings.NetworkSelection(rawValue: network) == nil {
                throw ValidationError("unknown network selection '\(network)'; expected wifi, cellular, both or default")
            }
        }

        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            if let network { try engine.setNetworkSelectionOverride(PrefetchSettings.NetworkSelection(rawValue: network)) }
            let status = try engine.status()
            struct PolicyView: Encodable {
                var networkSelection: String
                var networkSelectionOverride: String?
                var itemDownloadBehavior: String
                var downloadAllowed: Bool
                var downloadPolicyStatus: String
                var serverPolicy: CatalogProtocol.ServerPolicy?
            }
            let view = PolicyView(
                networkSelection: status.networkSelection.rawValue, networkSelectionOverride: status.networkSelectionOverride?.rawValue,
                itemDownloadBehavior: status.itemDownloadBehavior.rawValue, downloadAllowed: status.downloadAllowed,
                downloadPolicyStatus: status.downloadPolicyStatus, serverPolicy: status.serverPolicy)
            if common.output.json {
                Output.json(view)
                return
            }
            print("network selection: \(view.networkSelection)\(view.networkSelectionOverride == nil ? "" : " (override)")")
            print("item download behavior: \(view.itemDownloadBehavior)")
            print("download allowed: \(view.downloadAllowed) (\(view.downloadPolicyStatus))")
            if let server = view.serverPolicy {
                print(
                    "server: items per category \(server.itemsPerCategory.map(String.init) ?? "-"), daily bytes \(server.dailyByteLimit.map(String.init) ?? "-"), max file \(server.maxFileSize.map(String.init) ?? "-"), window \(server.windowStart ?? "-")-\(server.windowEnd ?? "-")"
                )
            } else {
                print("server: no policy received (not registered yet)")
            }
        }
    }

    struct Watch: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "watch",
            abstract:
                "Print the prefetch notifications of a running hubhost serve, or with --items, --categories or --sources the changes of a live set.",
            discussion: """
                Without a set: hub watch restricted to the Prefetch* names (GET /v1/notifications of the server at --url). \
                With --items (and the filters of prefetch items), --categories or --sources (and their filters): the live set \
                of the server (GET /v1/prefetch/items/watch, categories/watch, sources/watch): one line per change, `initial` \
                first, then willChange and didChange with the ids added, updated and removed and the size of the set after the \
                change (--json: each change as the server sends it, the objects after the change included). --count counts \
                these lines; with --count, running out of --timeout first is an error (exit status 1).
                """)
        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag
        @Option(help: "The server, e.g. http://127.0.0.1:8420 (default: server: in plugins.yaml).") var url: String?
        @Option(parsing: .unconditional, help: "Stop after this many notifications.") var count: Int?
        @Option(parsing: .unconditional, help: "Stop after this many seconds.") var timeout: Double?
        @OptionGroup var sets: PrefetchSetWatchOptions

        func validate() throws { try sets.validate(count: count, timeout: timeout) }

        func run() throws {
            if sets.chosen {
                try sets.run(url: url, manifest: manifestOption.manifest, json: output.json, count: count, timeout: timeout)
                return
            }
            var arguments = ["--manifest", manifestOption.manifest]
            if output.json { arguments.append("--json") }
            if let url { arguments += ["--url", url] }
            if let count { arguments += ["--count", String(count)] }
            if let timeout { arguments += ["--timeout", String(timeout)] }
            for name in PrefetchNotificationName.all { arguments += ["--name", name] }
            let watch = try HubWatchCommand.parse(arguments)
            try watch.run()
        }
    }
}
