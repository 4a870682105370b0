import Foundation
import XCTest

/// A librdkafka mock cluster (3 brokers on 127.0.0.1) in a child process: Tests/Fixtures/
/// kafka_mock_cluster.c, compiled on first use. Driven over its stdin; killed with SIGKILL when
/// released. Every wait is bounded.
final class KafkaMockCluster {
    let process = Process()
    let topic: String
    let partitions: Int
    /// `127.0.0.1:PORT,127.0.0.1:PORT,127.0.0.1:PORT`
    private(set) var bootstrap = ""
    private let input = Pipe()
    private let output = Pipe()
    private var buffered = ""

    /// One message as read back.
    struct Record: Equatable {
        var partition: Int
        var offset: Int
        var key: String
        var idempotencyKey: String
        var typeCode: String
        var value: String
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// A `plugins:` entry (its lines start at column 2) for an instance `kafka` of the Kafka sink
    /// plugin delivering to this cluster, with librdkafka's `clientSettings`.
    func sinkInstance(clientSettings: String) -> String {
        """
          - id: kafka
            use: \(TestSupport.plugin("KafkaSink"))
            config:
              bootstrap_servers: "\(bootstrap)"
              topic: \(topic)
              message_timeout: 2 sec
              client_settings: "\(clientSettings)"
        """
    }

    static func helper(in folder: String) throws -> String {
        try TestSupport.compileProgram("kafka_mock_cluster.c", to: folder + "/kafka_mock_cluster", libraries: ["rdkafka"])
    }

    init(folder: String, topic: String = "hubhost-events", partitions: Int = 4) throws {
        self.topic = topic
        self.partitions = partitions
        process.executableURL = URL(fileURLWithPath: try Self.helper(in: folder))
        process.arguments = [topic, String(partitions)]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let first = try readLine(timeout: 30)
        guard first.hasPrefix("bootstrap ") else { throw Failure(description: "the mock cluster said: \(first)") }
        bootstrap = String(first.dropFirst("bootstrap ".count))
        guard try readLine(timeout: 10) == "ready" else { throw Failure(description: "the mock cluster did not get ready") }
    }

    private func readLine(timeout: TimeInterval) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffered.firstIndex(of: "\n") {
                let line = String(buffered[..<newline])
                buffered.removeSubrange(...newline)
                return line
            }
            guard Date() < deadline else { throw Failure(description: "no answer from the mock cluster within \(timeout) s") }
            let chunk = output.fileHandleForReading.availableData  // blocks until data or EOF
            if chunk.isEmpty { throw Failure(description: "the mock cluster exited") }
            buffered += String(decoding: chunk, as: UTF8.self)
        }
    }

    /// Sends one command and returns the lines before its "ok".
    @discardableResult
    func command(_ line: String, timeout: TimeInterval = 30) throws -> [String] {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
        var lines: [String] = []
        for _ in 0..<1_000_000 {
            let answer = try readLine(timeout: timeout)
            if answer == "ok" { return lines }
            if answer.hasPrefix("error") { throw Failure(description: "\(line): \(answer)") }
            lines.append(answer)
        }
        throw Failure(description: "\(line): too many lines")
    }

    func setDown(_ broker: Int) throws { try command("down \(broker)") }
    func setUp(_ broker: Int) throws { try command("up \(broker)") }

    /// Every message of the topic, from the start.
    func consume() throws -> [Record] {
        try command("consume").map { line in
            let fields = line.split(separator: "\t", maxSplits: 5, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 6, let partition = Int(fields[0]), let offset = Int(fields[1]) else {
                throw Failure(description: "bad record line: \(line)")
            }
            return Record(partition: partition, offset: offset, key: fields[2], idempotencyKey: fields[3], typeCode: fields[4], value: fields[5])
        }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}
