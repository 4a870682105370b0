import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost users ...`: the Content Hub's users and their tag profiles (a thin front end over
/// UserStore, `hub.users` in the Swift API).
struct UsersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users",
        abstract: "Content Hub users: create, activate, and read or update a user's tag usage counts.",
        discussion: """
            Several users may exist; one is active. The active user's tag usage counts tailor the hub \
            (`hubhost hub present`), and reading an article adds its tags to them. Users live in \
            <data_dir>/hub/users.sqlite and survive restarts.
            """,
        subcommands: [Create.self, GenerateID.self, Activate.self, Active.self, List.self, Tags.self, TagCounts.self, UpdateTagCounts.self])

    /// Runs `work` with the user store; a user error is printed and exits 1.
    static func withUsers<T>(_ option: ManifestOption, _ work: (UserStore) throws -> T) throws -> T {
        let (host, hub) = try HubEngineAccess.open(option)
        defer { host.shutdown() }
        do {
            return try work(hub.users)
        } catch let error as UserStore.UserError {
            Output.error(error.description)
            throw ExitCode.failed
        }
    }

    static func printCounts(_ counts: [String: Int], json: Bool) {
        if json {
            Output.json(counts)
            return
        }
        if counts.isEmpty {
            print("no tags")
            return
        }
        Output.table(
            ["TAG", "COUNT"], counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { [$0.key, String($0.value)] })
    }

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Create a user (it is not made active; use `users activate`).",
            discussion: "Without --id, an anonymous id is generated. Each initial tag starts with a usage count of 1. Prints the id.")

        @Option(help: ArgumentHelp("The user id (no personal information); default: a generated one.", valueName: "id"))
        var id: String?

        @Option(help: ArgumentHelp("Initial tags, comma separated.", valueName: "a,b"))
        var tags: String?

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let list = UsersCommand.splitTags(tags)
            let created = try UsersCommand.withUsers(manifestOption) { users -> (String, [String: Int]) in
                let id = try users.createUser(id: id, tags: list)
                return (id, try users.tagCounts(of: id))
            }
            if output.json {
                Output.json(["id": .string(created.0), "tagCounts": .object(created.1.mapValues { .number(Double($0)) })] as [String: JSONValue])
            } else {
                print(created.0)
            }
        }
    }

    struct GenerateID: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate-id",
            abstract: "Print a new anonymous user id (nothing is created).")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let id = try UsersCommand.withUsers(manifestOption) { $0.generateID() }
            if output.json { Output.json(["id": id]) } else { print(id) }
        }
    }

    struct Activate: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "activate", abstract: "Make a user the active one (an unknown id is an error).")

        @Argument(help: "The user id.")
        var id: String

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            try UsersCommand.withUsers(manifestOption) { try $0.activate(id) }
            if output.json { Output.json(["active": id]) } else { print("active user: \(id)") }
        }
    }

    struct Active: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "active", abstract: "Print the active user.", discussion: "Exits 1 when no user is active.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let active = try UsersCommand.withUsers(manifestOption) { $0.activeUser() }
            if output.json { Output.json(["active": active]) } else { print(active ?? "no user is active") }
            if active == nil { throw ExitCode.failed }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the users, oldest first; the active one is marked.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let users = try UsersCommand.withUsers(manifestOption) { try $0.list() }
            if output.json {
                Output.json(users)
                return
            }
            if users.isEmpty {
                print("no users; create one with `hubhost users create`")
                return
            }
            let format = ISO8601DateFormatter()
            Output.table(
                ["ID", "CREATED", "ACTIVE"],
                users.map {
                    [$0.id, format.string(from: Date(timeIntervalSince1970: Double($0.createdMs) / 1000)), $0.isActive ? "yes" : ""]
                })
        }
    }

    struct Tags: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "tags", abstract: "Print a user's tags, one a line, sorted.")

        @Argument(help: "The user id.")
        var id: String

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let tags = try UsersCommand.withUsers(manifestOption) { try $0.tags(of: id) }
            if output.json { Output.json(tags) } else { tags.forEach { print($0) } }
        }
    }

    struct TagCounts: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tag-counts",
            abstract: "Print a user's tag usage counts, highest first.")

        @Argument(help: "The user id.")
        var id: String

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let counts = try UsersCommand.withUsers(manifestOption) { try $0.tagCounts(of: id) }
            UsersCommand.printCounts(counts, json: output.json)
        }
    }

    struct UpdateTagCounts: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "update-tag-counts",
            abstract: "Add to the ACTIVE user's tag usage counts: tag=+2 other=-1.",
            discussion:
                "Each delta is added to the tag's count; a tag whose count drops to 0 or below is removed. Prints the counts after the update.")

        @Argument(help: ArgumentHelp("A tag and the (signed) number to add to its count.", valueName: "tag=delta"))
        var deltas: [String]

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func validate() throws {
            _ = try UpdateTagCounts.parse(deltas)
        }

        static func parse(_ entries: [String]) throws -> [String: Int] {
            if entries.isEmpty { throw ValidationError("give at least one tag=delta, e.g. sports=+2 cooking=-1") }
            var result: [String: Int] = [:]
            for entry in entries {
                guard let equals = entry.lastIndex(of: "=") else { throw ValidationError("'\(entry)': expected tag=delta, e.g. sports=+2") }
                let tag = String(entry[..<equals])
                let text = String(entry[entry.index(after: equals)...])
                guard !tag.isEmpty else { throw ValidationError("'\(entry)': the tag before '=' is empty") }
                guard let delta = Int(text.hasPrefix("+") ? String(text.dropFirst()) : text) else {
                    throw ValidationError("'\(entry)': '\(text)' is not a whole number (use +2 or -1)")
                }
                result[tag, default: 0] += delta
            }
            return result
        }

        func run() throws {
            let parsed = try UpdateTagCounts.parse(deltas)
            let counts = try UsersCommand.withUsers(manifestOption) { try $0.updateTagCounts(parsed) }
            UsersCommand.printCounts(counts, json: output.json)
        }
    }

    static func splitTags(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
