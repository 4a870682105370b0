import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost identity ...`: the mobile identity manager (a thin front end over
/// `HubHost.identity()`): the recipient of this installation, identity checks and merges.
struct IdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "The Engage recipient of this installation: set it up, check an identity (and merge), show or reset it.",
        discussion: """
            Settings are in the identity: section of plugins.yaml (host, databaseListId, the column names). \
            The ids live in <data_dir>/identity.sqlite with the merge journal: a merge interrupted by a \
            failure or a crash is finished by the next setup or check, or when serve starts.
            """,
        subcommands: [Show.self, Setup.self, Check.self, Reset.self])

    /// Runs `work` with the identity manager; an identity or XMLAPI error is printed and exits 1.
    static func withIdentity<T>(_ option: ManifestOption, _ work: (MobileIdentityManager) throws -> T) throws -> T {
        let host = try option.startHost()
        defer { host.shutdown() }
        do {
            return try work(try host.identity())
        } catch let error as MobileIdentityManager.Failure {
            Output.error(error.description)
            throw ExitCode.failed
        } catch let error as XMLAPIError {
            Output.error(error.description)
            throw ExitCode.failed
        } catch let error as IdentityStore.Refused {
            Output.error(error.description)
            throw ExitCode.failed
        }
    }

    /// NAME=VALUE options, split at the first '='.
    static func pairs(_ given: [String], option: String) throws -> [(String, String)] {
        try given.map { text in
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw ValidationError("--\(option) '\(text)' is not NAME=VALUE")
            }
            return (String(text[..<equals]), String(text[text.index(after: equals)...]))
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print the recipient id, the mobile user id and any merge pending in the journal (no request is sent).")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let status = try IdentityCommand.withIdentity(manifestOption) { try $0.status() }
            if output.json {
                Output.json(status)
                return
            }
            print("recipient id:   \(status.recipientId ?? "(none)")")
            print("mobile user id: \(status.mobileUserId ?? "(none)")")
            print("set up:         \(status.isSetUp ? "yes" : "no (hubhost identity setup)")")
            if let merge = status.pendingMerge {
                print(
                    "pending merge \(merge.id): \(merge.oldRecipientId) into \(merge.newRecipientId)\(merge.lastError.map { "; last error: \($0)" } ?? "")"
                )
                for step in merge.steps { print("  \(step.index). [\(step.done ? "done" : "    ")] \(step.summary)") }
            }
        }
    }

    struct Setup: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "setup",
            abstract: "Set up the recipient: make a mobile user id if there is none, add a recipient holding it (AddRecipient).",
            discussion: "Nothing is sent when both ids are already present. Exits 1 on a fault or service failure.")

        @Option(
            name: .customLong("mobile-user-id"),
            help: ArgumentHelp("Use this mobile user id (needed when identity.enableAutoAnonymousTracking is false).", valueName: "id"))
        var mobileUserID: String?

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let result = try IdentityCommand.withIdentity(manifestOption) { manager -> MobileIdentityManager.SetupResult in
                if let mobileUserID { try manager.setMobileUserID(mobileUserID) }
                return try manager.setupRecipient()
            }
            if output.json {
                Output.json(result)
                return
            }
            print("\(result.created ? "set up" : "already set up"): recipient \(result.recipientId), mobile user id \(result.mobileUserId)")
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Check an identity: find the recipient with ALL the columns; update the current one, or merge into the found one.",
            discussion: """
                Outcomes: updated_current (no recipient has them: they are added to ours), \
                merged_into_recipient_without_mobile_user_id (ours moves onto it), \
                merged_into_recipient_with_mobile_user_id (we adopt its ids), already_current. \
                Sets up first when needed.
                """)

        @Option(
            name: .customLong("column"), help: ArgumentHelp("A column to match, e.g. --column facebook_id=100 (repeatable).", valueName: "NAME=VALUE")
        )
        var columns: [String] = []

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func validate() throws {
            if columns.isEmpty { throw ValidationError("give at least one --column NAME=VALUE") }
        }

        func run() throws {
            let given = try IdentityCommand.pairs(columns, option: "column")
            let result = try IdentityCommand.withIdentity(manifestOption) { try $0.checkIdentity(given) }
            if output.json {
                Output.json(result)
                return
            }
            print(
                "\(result.outcome.rawValue): recipient \(result.recipientId), mobile user id \(result.mobileUserId)\(result.mergedRecipientId.map { ", merged recipient \($0)" } ?? "")"
            )
        }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Forget the recipient id and mobile user id (the next setup adds a new recipient).",
            discussion: "Refused while a merge is pending in the journal, unless --force (which drops that merge, possibly half done).")

        @Flag(help: "Also drop a pending merge from the journal.")
        var force = false

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            try IdentityCommand.withIdentity(manifestOption) { try $0.reset(force: force) }
            if output.json { Output.json(["reset": true]) } else { print("identity reset") }
        }
    }
}

/// `hubhost xmlapi call OPERATION ...`: any Engage XMLAPI operation, by name.
struct XMLAPICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "xmlapi",
        abstract: "Call the Engage XMLAPI with the identity: section's host and OAuth values.",
        subcommands: [Call.self])

    struct Call: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "call",
            abstract: "Post one operation and print isSuccess, the fault (errorid, FaultString) and the answer's values.",
            discussion: """
                Every value is XML-escaped. Exits 0 on SUCCESS=true, 3 on an API fault (SUCCESS=false in a 2xx answer), \
                1 on a service failure (HTTP 400 or more after retries, no answer, no token).
                """)

        @Argument(help: "The operation, e.g. SelectRecipientData.")
        var operation: String

        @Option(
            name: .customLong("param"), help: ArgumentHelp("A parameter element, e.g. --param LIST_ID=45654 (repeatable).", valueName: "NAME=VALUE"))
        var params: [String] = []

        @Option(
            name: .customLong("column"),
            help: ArgumentHelp("A COLUMN (NAME/VALUE), e.g. --column 'Customer Id=123' (repeatable).", valueName: "NAME=VALUE"))
        var columns: [String] = []

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        struct Report: Encodable {
            var operation: String
            var isSuccess: Bool
            var errorId: Int?
            var faultString: String?
            var values: [String: String]
            var columns: [String: String]
        }

        func run() throws {
            let resource: XMLAPIResource
            do {
                resource = try XMLAPIResource(
                    operation, params: try IdentityCommand.pairs(params, option: "param"),
                    columns: try IdentityCommand.pairs(columns, option: "column"))
            } catch let error as XMLAPIResource.InvalidName {
                throw ValidationError(error.description)
            }
            let result = try IdentityCommand.withIdentity(manifestOption) { try $0.client.send(resource) }
            var columnValues: [String: String] = [:]
            for column in result.columns where columnValues[column.name] == nil { columnValues[column.name] = column.value }
            let report = Report(
                operation: operation, isSuccess: result.isSuccess, errorId: result.errorID,
                faultString: result.faultString, values: result.values, columns: columnValues)
            if output.json {
                Output.json(report)
            } else {
                print("isSuccess: \(report.isSuccess)")
                if !report.isSuccess {
                    print("errorid: \(report.errorId.map(String.init) ?? "-")")
                    print("faultString: \(report.faultString ?? "-")")
                }
                Output.table(["PATH", "VALUE"], report.values.sorted { $0.key < $1.key }.map { [$0.key, $0.value] })
                if !columnValues.isEmpty {
                    Output.table(["COLUMN", "VALUE"], columnValues.sorted { $0.key < $1.key }.map { [$0.key, $0.value] })
                }
            }
            if !report.isSuccess { throw ExitCode.declined }
        }
    }
}
