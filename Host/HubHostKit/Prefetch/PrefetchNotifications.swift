import Foundation

/// The prefetch engine's notifications on the host bus (`/v1/notifications`, `prefetch watch`):
/// the PCD SDK's VocServiceDelegate callbacks with a "Prefetch" prefix, and one per item state change.
/// Each is posted only after the change it announces is committed to the catalog.
public enum PrefetchNotificationName {
    /// The service accepted a registration: {"registrationId"}.
    public static let didRegister = "PrefetchDidRegister"
    /// A registration failed, {"error", "retryInSeconds"}, or was refused, {"error"} (a refusal is not retried until the licence changes).
    public static let didFailToRegister = "PrefetchDidFailToRegister"
    /// The service no longer knows this device (a sync answered not registered): {"reason"}; the engine registers again.
    public static let didBecomeNotRegistered = "PrefetchDidBecomeNotRegistered"
    /// The first catalog sync succeeded (the state became Initialized): {"items": the number of items it discovered}.
    public static let didInitialize = "PrefetchDidInitialize"
    /// Items new in the catalog (a sync, a look-up, an import): {"ids", "imported"?}.
    public static let itemsDiscovered = "PrefetchItemsDiscovered"
    /// A process claimed an item and started downloading it: {"ids"}.
    public static let itemsStartDownloading = "PrefetchItemsStartDownloading"
    /// Items became cached (every main file downloaded and verified): {"ids"}; not posted for a partial download.
    public static let itemsDownloaded = "PrefetchItemsDownloaded"
    /// Items evicted, their files removed (purge, or a catalog tombstone): {"ids", "reason"?}; the reason is the pressure or "expired".
    public static let itemsEvicted = "PrefetchItemsEvicted"
    /// `hubhost serve` offers the HLS endpoint: {"url"}, the endpoint's base URL.
    public static let hlsServerStarted = "PrefetchHLSServerStarted"
    /// `hubhost serve` stopped offering the HLS endpoint (it is shutting down): {"url"}.
    public static let hlsServerStopped = "PrefetchHLSServerStopped"
    /// Not a PCD SDK callback: {id, state, previous, reason?} for every state change.
    public static let itemStateChanged = "PrefetchItemStateChanged"
    /// Not a PCD SDK callback: {id, bytesDownloaded, size}, at most about twice a second per item.
    public static let downloadProgress = "PrefetchDownloadProgress"
    /// Not a PCD SDK callback: categories or sources changed (a toggle, or a sync that brought or
    /// removed some): {"categories"?: [ids], "sources"?: [names], "selected"?/"subscribed"?}. Their
    /// live sets re-read on it.
    public static let catalogChanged = "PrefetchCatalogChanged"
    /// Not a PCD SDK callback: an imported item became the catalog's entry for the same content
    /// {"id", "imported", "state", "keptFile"} (PrefetchImportMerge).
    public static let importMerged = "PrefetchImportMerged"

    /// Every name above, for a listener that subscribes to all of the engine's notifications.
    public static let all = [
        didRegister, didFailToRegister, didBecomeNotRegistered, didInitialize, itemsDiscovered, itemsStartDownloading,
        itemsDownloaded, itemsEvicted, hlsServerStarted, hlsServerStopped, itemStateChanged, downloadProgress, catalogChanged, importMerged
    ]
}
