import ArgumentParser
import Foundation
import HubHostKit
import HubHostTools

extension BenchCommand {
    struct Sinks: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sinks",
            abstract:
                "Events per second from the store to SUCCESSFULLY_POSTED through each event sink, beside the raw client sending the same messages.",
            discussion: """
                Tracks --count events into a fresh store for each sink, then times their delivery (batches of \
                --batch-size, every status change committed durably) through: the HTTP collector (a collector on \
                127.0.0.1), the Kafka sink (librdkafka's mock cluster, 3 brokers), the NATS sink (nats-server -js on \
                127.0.0.1, when installed). In the same run, the raw client sends the same messages: one POST per batch; \
                librdkafka producing directly; libnats publishing to JetStream directly. Also in the same run, the store \
                ceiling: plain SQLite on a scratch file with the event store's schema doing only the store's part of the \
                delivery (per batch one transaction: the delivered cursor moved past an answered batch, and the claim \
                of the next with its lease; synchronous = FULL), the rate no sink passes with this durability; each \
                sink's rate is printed as a fraction of it too. Beside it, the same ceiling with a status UPDATE per \
                delivered event, as the store recorded batches before the cursor. Run from the repository root (it \
                loads Plugins/*/plugin.yaml).
                """)

        @Option(
            parsing: .unconditional,
            help: "Events through each sink (and messages for each raw client); the default makes each sink's run last over a second.")
        var count: Int = 200_000

        @Option(name: .customLong("batch-size"), parsing: .unconditional, help: "Events per deliver call (1...1000).")
        var batchSize: Int = 1000

        @Option(help: ArgumentHelp("The folder of the bundled plugins' plugin.yaml files.", valueName: "path"))
        var plugins: String = "Plugins"

        @Option(name: .customLong("nats-server"), help: ArgumentHelp("The nats-server executable.", valueName: "path"))
        var natsServer: String = "/usr/sbin/nats-server"

        @Option(
            name: .customLong("sink"),
            help: ArgumentHelp(
                "Time only this sink (repeatable): http-collector, kafka-sink or nats-sink. The store ceiling is measured in every run.",
                valueName: "name"))
        var sinks: [String] = []

        @OptionGroup var output: JSONFlag

        func validate() throws {
            guard (1...10_000_000).contains(count) else { throw ValidationError("--count must be between 1 and 10000000") }
            guard (1...1000).contains(batchSize) else { throw ValidationError("--batch-size must be between 1 and 1000") }
            for sink in sinks where !SinkBenchmark.sinkNames.contains(sink) {
                throw ValidationError("--sink \(sink): no such sink; one of \(SinkBenchmark.sinkNames.joined(separator: ", "))")
            }
        }

        func run() throws {
            let folder = HostManifest.absolute(plugins, from: FileManager.default.currentDirectoryPath)
            let result = try SinkBenchmark(
                count: count, batchSize: batchSize, pluginsFolder: folder, natsServer: natsServer, sinks: sinks.isEmpty ? nil : Set(sinks)
            ).run { step in
                if !output.json { Output.error("bench sinks: \(step)") }
            }
            if output.json {
                Output.json(result)
                return
            }
            print("\(result.count) events, batches of \(result.batchSize):")
            // The ceiling first: the yardstick every sink's last column divides by.
            let ceiling = [
                "store ceiling (plain SQLite claim+cursor)", "scratch SQLite file, the store's schema",
                String(format: "%.0f", result.storeCeilingPerSecond), "-", "-", "1.00"
            ]
            let before = [
                "store ceiling, a status per event (before)", "scratch SQLite file, the store's schema",
                String(format: "%.0f", result.storeCeilingStatusPerEventPerSecond), "-", "-",
                String(format: "%.2f", result.storeCeilingStatusPerEventPerSecond / result.storeCeilingPerSecond)
            ]
            Output.table(
                ["sink", "to", "events/s", "raw client msgs/s", "sink / raw", "sink / store ceiling"],
                [ceiling, before]
                    + result.rows.map { row in
                        [
                            row.sink, row.destination, String(format: "%.0f", row.eventsPerSecond), String(format: "%.0f", row.rawPerSecond),
                            String(format: "%.2f", row.ratio), String(format: "%.2f", row.ceilingRatio)
                        ]
                    })
            for row in result.rows { print("  raw client for \(row.sink): \(row.rawClient)") }
            for row in result.rows {
                print(
                    "  \(row.sink): "
                        + String(
                            format: "%.2f s; in the sink's deliver calls %.2f s, in the store %.2f s (overlapping), waiting for the sink %.2f s",
                            row.seconds, row.sinkSeconds, row.storeSeconds, row.waitingForSinkSeconds))
            }
            for (sink, why) in result.notMeasured.sorted(by: { $0.key < $1.key }) { print("  \(sink) not measured: \(why)") }
        }
    }
}
