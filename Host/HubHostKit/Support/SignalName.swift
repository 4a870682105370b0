import Foundation

/// The name of the signal that ended a child process, for messages about a crash: an isolation
/// worker's here, a conformance test's child in the validator (HubHostTools).
package enum SignalName {
    package static func of(_ signal: Int32) -> String {
        switch signal {
        case SIGSEGV: return "SIGSEGV"
        case SIGABRT: return "SIGABRT"
        case SIGBUS: return "SIGBUS"
        case SIGILL: return "SIGILL"
        case SIGFPE: return "SIGFPE"
        case SIGKILL: return "SIGKILL"
        case SIGTRAP: return "SIGTRAP"
        case SIGTERM: return "SIGTERM"
        default: return "signal \(signal)"
        }
    }
}
