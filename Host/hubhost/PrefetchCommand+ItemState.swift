import ArgumentParser
import Foundation
import HubHostKit

/// The prefetch subcommands that change items' state: pause, resume, cancel, fill, delete, and
/// the saved and locked flags.
extension PrefetchCommand {
    struct Pause: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pause",
            abstract: "Pause queued, downloading or idle items (they resume only with download or resume).")
        @OptionGroup var common: Common
        @Argument(help: "Item uniqueIds.") var ids: [String]
        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            try PrefetchCommand.report(try engine.pause(ids), json: common.output.json)
        }
    }

    struct Resume: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume paused items (the same as download).")
        @OptionGroup var common: Common
        @Argument(help: "Item uniqueIds.") var ids: [String]
        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            try PrefetchCommand.report(try engine.download(ids), json: common.output.json)
        }
    }

    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cancel",
            abstract: "Cancel every download in progress: the items go idle and are queued again after one sync interval.")
        @OptionGroup var common: Common
        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            try PrefetchCommand.report(try engine.cancelCurrentDownloads(), json: common.output.json)
        }
    }

    struct Fill: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "fill",
            abstract: "Force fill: sync, then queue every discovered and idle item as user-initiated (not those set to none).")
        @OptionGroup var common: Common
        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            let queued = try engine.fill()
            if common.output.json { Output.json(["queued": queued]) } else { print("\(queued.count) item(s) queued") }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete items (files and metadata: state deleted), or with --files-only only their files.",
            discussion:
                "After --files-only an item is discovered again with downloadBehavior none: it downloads only when asked. Locked items are refused.")
        @OptionGroup var common: Common
        @Argument(help: "Item uniqueIds.") var ids: [String]
        @Flag(name: .customLong("files-only"), help: "Delete the files only (deleteFiles).") var filesOnly = false
        @Flag(name: .customLong("keep-thumbnail"), help: "With --files-only: keep the thumbnails.") var keepThumbnail = false
        func run() throws {
            let (host, engine) = try common.open()
            defer { host.shutdown() }
            try PrefetchCommand.report(try engine.delete(ids, filesOnly: filesOnly, keepThumbnail: keepThumbnail), json: common.output.json)
        }
    }

    struct Save: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "save", abstract: "Mark items saved (never purged).")
        @OptionGroup var common: Common
        @Argument(help: "Item uniqueIds.") var ids: [String]
        func run() throws { try PrefetchCommand.flag(common, .saved, true, ids) }
    }

    struct Unsave: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "unsave", abstract: "Clear items' saved mark.")
        @OptionGroup var common: Common
        @Argument(help: "Item uniqueIds.") var ids: [String]
        func run() throws { try PrefetchCommand.flag(common, .saved, false, ids) }
    }

    struct Lock: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lock", abstract: "Lock items while they are consumed (never purged or deleted).")
        @OptionGroup var common: Common
        @Argument(help: "Item uniqueIds.") var ids: [String]
        func run() throws { try PrefetchCommand.flag(common, .locked, true, ids) }
    }

    struct Unlock: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "unlock", abstract: "Unlock items.")
        @OptionGroup var common: Common
        @Argument(help: "Item uniqueIds.") var ids: [String]
        func run() throws { try PrefetchCommand.flag(common, .locked, false, ids) }
    }

    static func flag(_ common: Common, _ flag: PrefetchEngine.Flag, _ value: Bool, _ ids: [String]) throws {
        let (host, engine) = try common.open()
        defer { host.shutdown() }
        try report(engine.set(flag, value, on: ids), json: common.output.json)
    }
}
