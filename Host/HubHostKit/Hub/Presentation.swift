/// What presenting the hub shows: the hub tailored for a user's tag counts, its channels, and each
/// channel's articles in tailored order. `hubhost hub present` prints it; the web hub renders it.
public struct Presentation: Codable, Equatable, Sendable {
    /// One channel of the presented hub.
    public struct ChannelView: Codable, Equatable, Sendable {
        /// The channel id.
        public var id: String
        /// The channel title.
        public var title: String
        /// The channel's tags.
        public var tags: [String]
        /// The channel's articles in tailored order.
        public var articles: [ContentBundle.Article]
    }

    /// The presented hub's id.
    public var hubID: String
    /// The hub's title.
    public var hubTitle: String
    /// The hub's tags.
    public var hubTags: [String]
    /// The hub's channels in tailored order.
    public var channels: [ChannelView]
    /// The tag counts the tailoring used (the user's, or a tags override).
    public var counts: [String: Int]
    /// The item a URI override opened (`zbimdb://...`), nil when presenting the hub itself.
    public var target: ContentURI?

    /// Tailors `bundle` for `counts`; with `hubID`, that hub instead of the best match.
    public init?(bundle: ContentBundle, counts: [String: Int], hubID: String? = nil, target: ContentURI? = nil) {
        guard let hub = hubID.flatMap(bundle.hub) ?? Tailoring.selectHub(bundle.hubs, counts: counts) else { return nil }
        self.hubID = hub.id
        hubTitle = hub.title
        hubTags = hub.tags
        channels = hub.channels.map {
            ChannelView(id: $0.id, title: $0.title, tags: $0.tags, articles: Tailoring.order($0.articles, counts: counts))
        }
        self.counts = counts
        self.target = target
    }
}
