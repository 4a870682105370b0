/// What an acknowledged event survives (`events.durability` in plugins.yaml): the trade between
/// the cost of each commit and what may be lost when the machine, not hubhost, goes down.
package enum EventDurability: String, CaseIterable, Sendable {
    /// Each commit is on disk before it returns (SQLite `synchronous = FULL`: the WAL is fsynced
    /// at every commit): an acknowledged event survives kill -9, a crash of the OS and a power
    /// loss. The default.
    case fsync
    /// Each commit is in the operating system's page cache before it returns (`synchronous =
    /// NORMAL` in WAL mode: fsync only at checkpoints): an acknowledged event survives kill -9 or
    /// a crash of hubhost, but the last commits before a power loss or an OS crash may be lost
    /// (never a corrupted file). Commits skip an fsync each, so ingest goes faster.
    case process

    /// The `PRAGMA synchronous` value of the store's connections.
    var synchronous: String {
        switch self {
        case .fsync: return SharedSQLite.durableSynchronous
        case .process: return "NORMAL"
        }
    }
}
