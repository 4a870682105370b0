import Foundation

/// An external program a benchmark drives (wrk, openssl): run to its end, its output (stdout and
/// stderr together) returned, or a failure that quotes it.
enum BenchTool {
    static func run(_ path: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PageServingBenchmark.Failure.failed("\((path as NSString).lastPathComponent) \(arguments.joined(separator: " ")) failed: \(output)")
        }
        return output
    }
}
