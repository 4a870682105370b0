import ArgumentParser

/// The exit codes of every hubhost command, as docs/cli.md lists them. 0 is success; 64 is a
/// command line that was refused (ArgumentParser's `validationFailure`, with the command's usage).
extension ExitCode {
    /// The command ran and could not do what was asked; stderr says why (a failed sync, a manifest
    /// with problems, a plugin that failed a test, a server that answered with an error).
    static let failed = ExitCode(1)
    /// What the command was pointed at cannot be used at all: a manifest that is missing, unreadable
    /// or not YAML, a server address that cannot be worked out, a test name that does not exist.
    static let unusableInput = ExitCode(2)
    /// The other side answered "no", which is not a failure of hubhost: an XMLAPI fault, or a
    /// notification that is not one of hubhost's.
    static let declined = ExitCode(3)
}
