import Synchronization

/// One engine's settings section as the last reload left it. The engine and the parts it made
/// (event delivery, the prefetch queue) share one box and read `current` where they use a value, so
/// a reload (`HubHost.reload`) that replaces it changes what they do from their next use on, with
/// no restart. Only the keys a section lists as live are ever changed this way
/// (`HubHost.liveReloadKeys`); the others keep the value the engine opened with.
package final class LiveSettings<Value: Sendable>: Sendable {
    private let value: Mutex<Value>

    package init(_ initial: Value) { value = Mutex(initial) }

    /// The settings now. Any thread; never waits on anything but the copy.
    package var current: Value { value.withLock { $0 } }

    /// Replaces the settings; readers see the new value from their next read.
    package func replace(_ new: Value) { value.withLock { $0 = new } }
}
