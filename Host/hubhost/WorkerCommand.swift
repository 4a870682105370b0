import ArgumentParser
import Foundation
import HubHostKit

/// `hubhost worker`: the child process that runs one `isolation: process` plugin instance.
/// hubhost starts it itself; it is not meant to be run by hand.
struct WorkerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Run one isolated plugin instance for a hubhost parent (started by hubhost itself).",
        shouldDisplay: false)

    @Option(help: "The socket file descriptor inherited from the parent.")
    var fd: Int32

    @Option(help: "The instance id (shown in ps).")
    var instance: String = ""

    @Option(name: .customLong("memory-limit"), help: "Address-space limit in MiB.")
    var memoryLimit: Int = 4096

    func run() throws {
        // Plugins that print must not write into the protocol: it is on its own descriptor, and
        // stdout goes to stderr so nothing a plugin prints is mistaken for output of hubhost.
        dup2(2, 1)
        // Only what the host handed over on purpose stays open (0-2, the socket 3, the call slot 4,
        // the library 5): a descriptor of serve's that leaked into the spawn is not the plugin's.
        IsolationWorker.closeDescriptors(from: 6)
        var limit = rlimit(rlim_cur: rlim_t(memoryLimit) << 20, rlim_max: rlim_t(memoryLimit) << 20)
        setrlimit(Int32(RLIMIT_AS.rawValue), &limit)
        let status = IsolationWorker.serve(fd: fd)
        throw ExitCode(status)
    }
}
