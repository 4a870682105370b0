import Foundation

/// The prefetch engine's notifications on the host bus (`/v1/notifications`, `prefetch watch`):
/// the PCD SDK's VocServiceDelegate callbacks with a "Prefetch" prefix, and one per item state change.
/// Each is posted only after the change it announces is committed to the catalog.
public enum PrefetchNotificationName {
    public static let didRegister = "PrefetchDidRegister"
    public static let didFailToRegister = "PrefetchDidFailToRegister"
    public static let didBecomeNotRegistered = "PrefetchDidBecomeNotRegistered"
    public static let didInitialize = "PrefetchDidInitialize"
    public static let itemsDiscovered = "PrefetchItemsDiscovered"
    public static let itemsStartDownloading = "PrefetchItemsStartDownloading"
    public static let itemsDownloaded = "PrefetchItemsDownloaded"
    public static let itemsEvicted = "PrefetchItemsEvicted"
    public static let hlsServerStarted = "PrefetchHLSServerStarted"
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

    public static let all = [
        didRegister, didFailToRegister, didBecomeNotRegistered, didInitialize, itemsDiscovered, itemsStartDownloading,
        itemsDownloaded, itemsEvicted, hlsServerStarted, hlsServerStopped, itemStateChanged, downloadProgress, catalogChanged, importMerged
    ]
}
