import ArgumentParser
import Foundation
import HubHostKit

struct CampaignsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "campaigns",
        abstract: "The in-app messaging campaigns: load, list, the ready queue, impressions, opt-outs, the user.",
        subcommands: [Sync.self, List.self, Ready.self, Preview.self, Displayed.self, OptOut.self, UserCommand.self])

    /// Counts one impression of a campaign (`messages impression ID`, and its old name `campaigns displayed ID`).
    static func impression(_ id: String, _ manifestOption: ManifestOption) throws {
        let (host, engine) = try engine(manifestOption)
        defer { host.shutdown() }
        do { try engine.displayed(id) } catch {
            Output.error("\(error)")
            throw ExitCode.failed
        }
    }

    /// Starts the host and returns its campaign engine, or exits when campaigns are disabled.
    static func engine(_ option: ManifestOption) throws -> (HubHost, CampaignEngine) {
        let host = try option.startHost()
        guard let engine = try host.campaigns() else {
            host.shutdown()
            Output.error("campaigns are disabled in \(host.manifest.file) (campaigns: enabled: false)")
            throw ExitCode.failed
        }
        return (host, engine)
    }

    struct Sync: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "Load the campaigns: from --file, else from campaigns.config_url / ping_url, else from campaigns.file.")

        @Option(help: ArgumentHelp("A campaign list in the ping response format.", valueName: "path"))
        var file: String?

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            let settings = host.manifest.campaigns
            do {
                if file == nil, settings.configURL != nil || settings.pingURL != nil {
                    let report = try engine.sync(configURL: settings.configURL, pingURL: settings.pingURL, http: HTTPFetcher())
                    if !report.enabled {
                        if output.json { Output.json(report) } else { print("in-app messaging is disabled by the configuration endpoint") }
                        return
                    }
                } else if let path = file ?? settings.file {
                    try engine.loadFile(HostManifest.absolute(path, from: FileManager.default.currentDirectoryPath))
                } else {
                    throw ValidationError("no campaign source: give --file, or set campaigns.file, config_url or ping_url in plugins.yaml")
                }
            } catch let error as ValidationError {
                throw error
            } catch {
                Output.error("\(error)")
                throw ExitCode.failed
            }
            if output.json {
                Output.json(["loaded": JSONValue.number(Double(engine.campaigns.count)), "skipped": .array(engine.skipped.map(JSONValue.string))])
            } else {
                print("loaded \(engine.campaigns.count) campaign\(engine.campaigns.count == 1 ? "" : "s")")
                for line in engine.skipped { print("skipped \(line)") }
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Every loaded campaign with its state for the current user.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            let statuses = engine.statuses()
            if output.json {
                Output.json(statuses)
                return
            }
            if statuses.isEmpty {
                print("no campaigns loaded (hubhost campaigns sync --file FILE)")
                return
            }
            Output.table(
                ["ID", "TITLE", "PRIORITY", "GROUP", "TRIGGERS", "IMPRESSIONS LEFT", "STATE"],
                statuses.map { s in
                    [
                        s.id, s.title, "\(s.priority)", s.group.rawValue, "\(s.triggersSatisfied)/\(s.triggers)",
                        "\(s.impressionsLeft)/\(s.maxImpressions)",
                        s.optedOut ? "opted out" : s.expired ? "expired" : s.ready ? "ready" : "waiting"
                    ]
                })
        }
    }

    struct Ready: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "ready", abstract: "The queue of campaigns ready to show, in order.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            let ready = engine.ready()
            if output.json {
                Output.json(ready)
            } else if ready.isEmpty {
                print("no campaign is ready")
            } else {
                for campaign in ready {
                    print(
                        "\(campaign.id)  \(campaign.title)\(campaign.contexts.isEmpty ? "" : "  contexts: \(campaign.contexts.joined(separator: ", "))")"
                    )
                }
            }
        }
    }

    struct Preview: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "preview",
            abstract: "Render a campaign's message from a file as an HTML page, without loading it or counting an impression.",
            discussion: """
                FILE is a campaign list in the ping response format (what `campaigns sync --file` loads), one \
                {"campaignData": {...}} of it, or the campaignData object alone; --id picks one of several. The page \
                (title, header, body, image, buttons with their actions, colours, the layout of the display type) has \
                no script and one stylesheet named in its Content-Security-Policy. The image is fetched when its host is \
                in hub.whitelist_domains (or the URL in hub.whitelist_urls) of the manifest, cached in the data \
                directory (campaign-images/) and embedded, so the page shows offline; a refused or failed image shows \
                a placeholder with why. An invalid colour is left out, with a note on the page and on stderr.
                """)

        @Argument(help: ArgumentHelp("The campaign file (JSON).", valueName: "FILE.json"))
        var file: String

        @Option(help: ArgumentHelp("The campaign to preview when the file has several.", valueName: "id"))
        var id: String?

        @Option(name: [.short, .long], help: ArgumentHelp("Write the page to this file instead of stdout.", valueName: "FILE.html"))
        var output: String?

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var json: JSONFlag

        func run() throws {
            // The manifest names the data directory (the image cache) and the allow-list; without
            // plugins.yaml the defaults apply (nothing allowed: images show as placeholders).
            let manifest: HostManifest
            if manifestOption.manifest == "plugins.yaml" && !FileManager.default.fileExists(atPath: "plugins.yaml") {
                manifest = HostManifest.empty()
            } else {
                do { manifest = try HostManifest.load(path: manifestOption.manifest) } catch {
                    Output.error("\(error)")
                    throw ExitCode.unusableInput
                }
            }
            let campaign: Campaign
            do { campaign = try CampaignPreview.campaign(fromFile: file, id: id) } catch {
                Output.error("\(error)")
                throw ExitCode.failed
            }
            let images = CampaignImageCache(manifest: manifest)
            let page = CampaignPreview.render(campaign, image: images.image(for: campaign.imageURL), frameAncestors: manifest.hub.frameAncestors)
            if let output {
                do { try Data(page.html.utf8).write(to: URL(fileURLWithPath: output)) } catch {
                    Output.error("cannot write \(output): \(error.localizedDescription)")
                    throw ExitCode.failed
                }
            }
            if json.json {
                Output.json(page.summary)
                return
            }
            if output == nil { FileHandle.standardOutput.write(Data(page.html.utf8)) }
            if let problem = page.summary.imageProblem { Output.error("note: the image is not shown: \(problem)") }
            for note in page.summary.notes { Output.error("note: \(note)") }
        }
    }

    /// The old name of `hubhost messages impression ID`: hidden, kept so that scripts still work.
    struct Displayed: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "displayed", abstract: "The old name of `hubhost messages impression`.",
            shouldDisplay: false)

        @Argument(help: "The campaign id.")
        var id: String

        @OptionGroup var manifestOption: ManifestOption

        func run() throws { try CampaignsCommand.impression(id, manifestOption) }
    }

    struct OptOut: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "opt-out", abstract: "The user opted out of a campaign: it never shows to them again.")

        @Argument(help: "The campaign id.")
        var id: String

        @OptionGroup var manifestOption: ManifestOption

        func run() throws {
            let (host, engine) = try CampaignsCommand.engine(manifestOption)
            defer { host.shutdown() }
            do { try engine.optOut(id) } catch {
                Output.error("\(error)")
                throw ExitCode.failed
            }
        }
    }

    struct UserCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "user", abstract: "The campaign user (each has its own cache).",
            subcommands: [Set.self])

        struct Set: ParsableCommand {
            static let configuration = CommandConfiguration(commandName: "set", abstract: "Set the user; both ids empty is the anonymous user.")

            @Option(name: .customLong("user-id"), help: "The user id.")
            var userID: String = ""

            @Option(name: .customLong("id-tracking-identifier"), help: "The tracking identifier.")
            var idTrackingIdentifier: String = ""

            @Option(name: .customLong("access-token"), help: "The access token.")
            var accessToken: String?

            @OptionGroup var manifestOption: ManifestOption

            func run() throws {
                let (host, engine) = try CampaignsCommand.engine(manifestOption)
                defer { host.shutdown() }
                try engine.setUser(.init(userID: userID, idTrackingIdentifier: idTrackingIdentifier, accessToken: accessToken))
                // A new user re-pings, as registerPreference does.
                let settings = host.manifest.campaigns
                if settings.configURL != nil || settings.pingURL != nil {
                    do { _ = try engine.sync(configURL: settings.configURL, pingURL: settings.pingURL, http: HTTPFetcher()) } catch {
                        Output.error("user set; the ping failed: \(error)")
                        throw ExitCode.failed
                    }
                }
            }
        }
    }
}
