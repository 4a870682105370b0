/// hubhost's own version: what a plugin's `requires: { hubhost: ... }` is checked against, and what
/// `hubhost --version` prints. 0.2.0 is the version CHANGELOG.md names (the one an app depends on
/// with SwiftPM); raise it with each release's CHANGELOG heading.
public enum HubHostVersion {
    /// This hubhost's version, major.minor.patch (e.g. "0.2.0").
    public static let current = "0.2.0"
}
