import Foundation
import HubHostKit

/// `--leaks`: runs a test's child under valgrind's memcheck and reports memory the plugin library
/// definitely lost. valgrind 3.19 cannot read the DWARF 5 debug info Swift's toolchain writes, so
/// the child runs from copies of hubhost and of the library with debug info stripped; leaks are
/// attributed to the plugin when a frame of the allocating stack is in its library.
final class LeakCheck {
    let folder: String
    let executable: String
    let library: String?
    let logFile: String

    init(libraryPath: String?) throws {
        guard let valgrind = Self.which("valgrind") else {
            throw ConformanceFailure("valgrind is not installed (apt-get install valgrind)")
        }
        _ = valgrind
        folder = NSTemporaryDirectory() + "hubhost-leaks-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        executable = folder + "/hubhost"
        logFile = folder + "/memcheck.txt"
        try Self.strip(LibraryLocator.runningExecutablePath(), to: executable)
        if let libraryPath {
            let copy = folder + "/" + (libraryPath as NSString).lastPathComponent
            try Self.strip(libraryPath, to: copy)
            library = copy
        } else {
            library = nil
        }
    }

    /// The child command, run under memcheck from the stripped copies.
    func wrap(_ command: [String]) -> [String] {
        var rest = Array(command.dropFirst())
        if let library { rest += ["--library", library] }
        return [
            "/usr/bin/env", "valgrind", "--tool=memcheck", "--leak-check=full", "--show-leak-kinds=definite",
            "--errors-for-leak-kinds=definite", "--log-file=\(logFile)", executable
        ] + rest
    }

    /// A description of the plugin's definite leaks, or nil when there are none.
    func definiteLeaks() -> String? {
        guard let log = try? String(contentsOfFile: logFile, encoding: .utf8), let library else { return nil }
        let name = (library as NSString).lastPathComponent
        var leaks: [String] = []
        var block: [String] = []
        func close() {
            if let first = block.first, first.contains("definitely lost"), block.contains(where: { $0.contains(name) }) {
                let header = first.replacingOccurrences(of: #"^==\d+== "#, with: "", options: .regularExpression)
                let frames = block.dropFirst().prefix(3).map {
                    $0.replacingOccurrences(of: #"^==\d+==\s+"#, with: "", options: .regularExpression)
                }
                leaks.append(header + " (" + frames.joined(separator: " ") + ")")
            }
            block = []
        }
        for line in log.split(separator: "\n").map(String.init) {
            if line.range(of: #"^==\d+== $"#, options: .regularExpression) != nil { close() } else { block.append(line) }
        }
        close()
        return leaks.isEmpty
            ? nil : "memcheck: \(leaks.count) definite leak\(leaks.count == 1 ? "" : "s") in \(name): " + leaks.joined(separator: "; ")
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: folder) }

    static func strip(_ source: String, to destination: String) throws {
        let result = try ChildProcess.run(["/usr/bin/env", "objcopy", "--strip-debug", source, destination], timeoutMs: 60_000)
        guard result.termination == .exited(0) else {
            throw ConformanceFailure("objcopy --strip-debug \(source) failed: \(result.stderr)")
        }
        chmod(destination, 0o755)
    }

    static func which(_ program: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(folder)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
