import Foundation

/// A loaded campaign's message as a page (`CampaignPreview`), read only: previewing counts no
/// impression, tracks no event and changes neither the queue nor the current message.
extension CampaignEngine {
    /// The loaded campaign with `id` (re-reading the stored list when another process changed it);
    /// nil when none has it. Reading it changes nothing.
    public func campaign(_ id: String) -> Campaign? {
        lock.withLock {
            refreshQuietly()
            return positions[id].map { loaded[$0] }
        }
    }

    /// The preview page of the loaded campaign `id`, its image from `images`. Throws `NotFound`
    /// when no loaded campaign has the id. Blocks while an image is fetched (at most the cache's
    /// timeout): call it where blocking is allowed.
    public func preview(_ id: String, images: CampaignImageCache, frameAncestors: String = "'self'") throws -> CampaignPreview.Page {
        guard let campaign = campaign(id) else { throw NotFound(description: "no campaign \(id)") }
        return CampaignPreview.render(campaign, image: images.image(for: campaign.imageURL), frameAncestors: frameAncestors)
    }
}
