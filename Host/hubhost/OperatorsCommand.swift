import ArgumentParser
import Foundation
import HubHostKit

struct OperatorsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operators",
        abstract: "The campaign trigger operators the loaded plugins provide; test one in isolation.",
        subcommands: [List.self, Test.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the operators: name, wire code, plugin and instance.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        struct Row: Encodable {
            var name: String
            var wireCode: Int32
            var plugin: String
            var instance: String
        }

        func run() throws {
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let set = OperatorSet(host.registry.plugins(of: .triggerOperator))
            let rows = set.operators.map {
                Row(name: $0.operatorName, wireCode: $0.wireCode, plugin: $0.handle.pluginID, instance: $0.handle.instanceID)
            }
            if output.json {
                Output.json(rows)
            } else if rows.isEmpty {
                print("no trigger operators loaded (add Plugins/StandardOperators/plugin.yaml to plugins.yaml)")
            } else {
                Output.table(
                    ["OPERATOR", "CODE", "PLUGIN", "INSTANCE"],
                    rows.map { [$0.name, $0.wireCode == 0 ? "-" : String($0.wireCode), $0.plugin, $0.instance] })
            }
            for conflict in set.conflicts { Output.error("warning: \(conflict)") }
        }
    }

    struct Test: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test",
            abstract: "Compare one event value with one trigger value using one operator; print true or false.",
            discussion: """
                Types: string, int (integer), double, bool (boolean), time (ms since epoch), or a wire code 1..5.
                A type mismatch or a failure prints false, and the reason on stderr.
                Example: hubhost operators test GREATER_THAN --type int --trigger 5 --event 10
                """)

        @Argument(help: "The operator: a name (EQUALS, STARTS_WITH...) or a wire code (1..8).")
        var `operator`: String

        @Option(help: "The type of both values.")
        var type: String

        @Option(name: .customLong("event-type"), help: "The event value's type, when it differs from --type (to test mismatches).")
        var eventType: String?

        @Option(parsing: .unconditional, help: "The campaign trigger's value.")
        var trigger: String

        @Option(parsing: .unconditional, help: "The event attribute's value.")
        var event: String

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        static func value(_ text: String, as type: String) throws -> PluginValue {
            switch type.lowercased() {
            case "string", "1": return .string(text)
            case "int", "integer", "2":
                guard let i = Int64(text) else { throw ValidationError("'\(text)' is not an integer") }
                return .int(i)
            case "double", "3":
                guard let d = Double(text) else { throw ValidationError("'\(text)' is not a number") }
                return .double(d)
            case "bool", "boolean", "4":
                guard let b = Bool(text.lowercased()) else { throw ValidationError("'\(text)' is not true or false") }
                return .bool(b)
            case "time", "5":
                guard let t = Int64(text) else { throw ValidationError("'\(text)' is not milliseconds since 1970") }
                return .timeMs(t)
            default:
                throw ValidationError("unknown type '\(type)'; expected string, int, double, bool or time (or 1..5)")
            }
        }

        struct Answer: Encodable {
            var `operator`: String
            var result: Bool
            var reason: String?
        }

        func run() throws {
            let triggerValue = try Self.value(trigger, as: type)
            let eventValue = try Self.value(event, as: eventType ?? type)
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let set = OperatorSet(host.registry.plugins(of: .triggerOperator))
            guard let op = set.find(self.operator) else {
                let names = set.operators.map(\.operatorName)
                Output.error("no operator '\(self.operator)'; loaded: \(names.isEmpty ? "none" : names.joined(separator: ", "))")
                throw ExitCode.unusableInput
            }
            let answer = op.compare(event: eventValue, trigger: triggerValue)
            let reason = answer.status == 0 ? nil : "\(StatusCode.name(answer.status))\(answer.reason.isEmpty ? "" : ": \(answer.reason)")"
            if output.json {
                Output.json(Answer(operator: op.operatorName, result: answer.result, reason: reason))
            } else {
                print(answer.result ? "true" : "false")
                if let reason { Output.error(reason) }
            }
        }
    }
}
