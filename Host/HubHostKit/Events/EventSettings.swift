import Foundation

/// The event engine's settings: the Engage SDK's configuration values that apply here, with its
/// defaults, overridden by the `events:` section of plugins.yaml. `hubhost config show` prints each
/// effective value and where it came from.
package struct EventSettings: Sendable {
    /// Every key of `events:`, its type, default and meaning.
    package static let schema = ConfigSchema(keys: [
        ConfigKey(
            key: "augmentation_timeout", type: .duration, defaultValue: .double(15),
            doc: "One timeout per event for all augmentation plugins together (Augmentation->augmentationTimeout).", range: durationRange, live: true),
        ConfigKey(
            key: "durability", type: .string, defaultValue: .string(EventDurability.fsync.rawValue),
            doc:
                "What an acknowledged event survives. fsync: each commit is on disk before it returns (survives a power loss). process: in the OS's cache (survives kill -9 or a crash of hubhost, not a power loss or OS crash), for faster ingest. Read at start.",
            allowedValues: EventDurability.allCases.map(\.rawValue)),
        ConfigKey(
            key: "cache_size", type: .int, defaultValue: .int(3),
            doc: "Events to collect before a batch is posted (General->ubfEventCacheSize).", range: .between(1, 1_000_000), live: true),
        ConfigKey(
            key: "flush_interval", type: .duration, defaultValue: .double(60),
            doc: "hubhost serve posts what is waiting at least this often.", range: durationRange, live: true),
        ConfigKey(
            key: "sink", type: .string, defaultValue: .string(""),
            doc: "The event_sink plugin instance events are delivered through; empty or http-collector: the built-in HTTP collector (collector_url).",
            live: true),
        ConfigKey(
            key: "collector_url", type: .string, defaultValue: .string(""),
            doc: "Where batches are POSTed as JSON; empty keeps events NOT_POSTED on disk.", live: true),
        ConfigKey(
            key: "max_num_retries", type: .int, defaultValue: .int(3),
            doc: "Attempts before an event becomes FAILED_POST (Networking->maxNumRetries).", range: .between(1, 100), live: true),
        ConfigKey(
            key: "retry_base_delay", type: .duration, defaultValue: .double(1),
            doc: "First retry delay; doubled each attempt, with jitter.", range: .between(0, SafeTime.maxDurationSeconds), live: true),
        ConfigKey(
            key: "post_timeout", type: .duration, defaultValue: .double(30),
            doc: "Deadline of one POST to the collector.", range: durationRange, live: true),
        ConfigKey(
            key: "expire_local_events_after", type: .duration, defaultValue: .double(30 * 86_400),
            doc: "SUCCESSFULLY_POSTED events are purged after this (LocalEventStore->expireLocalEventsAfterNumDays).", range: durationRange,
            live: true),
        ConfigKey(
            key: "session_timeout", type: .duration, defaultValue: .double(30 * 60),
            doc: "Inactivity that ends a session (Session->sessionLifecycleExpiration).", range: durationRange),
        ConfigKey(
            key: "default_current_campaign_expiration", type: .duration, defaultValue: .double(86_400),
            doc: "How long a current campaign lasts without an end time (General->defaultCurrentCampaignExpiration).", range: durationRange),
        ConfigKey(
            key: "param_current_campaign", type: .string, defaultValue: .string("CurrentCampaign"),
            doc: "URL or notification parameter naming the current campaign (ParamFieldNames->ParamCurrentCampaign)."),
        ConfigKey(
            key: "param_campaign_end_time", type: .string, defaultValue: .string("CampaignEndTimeStamp"),
            doc: "Parameter with the campaign's end, epoch seconds GMT."),
        ConfigKey(key: "event_name_field", type: .string, defaultValue: .string("Event Name"), doc: "UBFFieldNames->UBFEventNameFieldName."),
        ConfigKey(
            key: "session_duration_field", type: .string, defaultValue: .string("Session Duration"),
            doc: "UBFFieldNames->UBFSessionDurationFieldName."),
        ConfigKey(
            key: "current_campaign_field", type: .string, defaultValue: .string("Campaign Name"),
            doc: "UBFFieldNames->UBFCurrentCampaignFieldName."),
        ConfigKey(
            key: "last_campaign_field", type: .string, defaultValue: .string("Last Campaign"),
            doc: "UBFFieldNames->UBFLastCampaignFieldName."),
        ConfigKey(key: "device_name", type: .string, defaultValue: .string(""), doc: "Core value sent with every event."),
        ConfigKey(key: "device_version", type: .string, defaultValue: .string(""), doc: "Core value sent with every event."),
        ConfigKey(key: "os_name", type: .string, defaultValue: .string("Linux"), doc: "Core value sent with every event."),
        ConfigKey(key: "os_version", type: .string, defaultValue: .string(""), doc: "Core value sent with every event."),
        ConfigKey(key: "app_name", type: .string, defaultValue: .string(""), doc: "Core value sent with every event."),
        ConfigKey(key: "app_version", type: .string, defaultValue: .string(""), doc: "Core value sent with every event."),
        ConfigKey(key: "device_id", type: .string, defaultValue: .string(""), doc: "Core value sent with every event."),
        ConfigKey(key: "mobile_user_id", type: .string, defaultValue: .string(""), doc: "User identifier sent with every event."),
        ConfigKey(
            key: "auth_token_url", type: .string, defaultValue: .string(""),
            doc: "OAuth 2 token endpoint (refresh-token grant); empty sends no Authorization header."),
        ConfigKey(key: "auth_client_id", type: .string, defaultValue: .string(""), doc: "OAuth 2 client id."),
        ConfigKey(key: "auth_client_secret", type: .string, defaultValue: .string(""), doc: "OAuth 2 client secret."),
        ConfigKey(key: "auth_refresh_token", type: .string, defaultValue: .string(""), doc: "OAuth 2 refresh token.")
    ])

    /// The accepted durations: positive, and small enough for the clock arithmetic they feed.
    static let durationRange = ConfigRange.positive(atMost: SafeTime.maxDurationSeconds)

    package var values: [String: PluginValue]
    /// The plugins.yaml line each value came from; absent: the built-in default.
    package var lines: [String: Int]

    package init(values: [String: PluginValue] = [:], lines: [String: Int] = [:]) {
        var filled = values
        for key in Self.schema.keys where filled[key.key] == nil { filled[key.key] = key.defaultValue }
        self.values = filled
        self.lines = lines
    }

    func string(_ key: String) -> String { if case .string(let s)? = values[key] { return s } else { return "" } }
    func seconds(_ key: String) -> Double { if case .double(let d)? = values[key] { return d } else { return 0 } }
    func int(_ key: String) -> Int { if case .int(let i)? = values[key] { return Int(i) } else { return 0 } }

    package var augmentationTimeout: Double { seconds("augmentation_timeout") }
    package var durability: EventDurability { EventDurability(rawValue: string("durability")) ?? .fsync }
    package var cacheSize: Int { max(1, int("cache_size")) }
    package var flushInterval: Double { seconds("flush_interval") }
    package var collectorURL: String { string("collector_url") }
    /// The event_sink instance id; "" for the built-in HTTP collector.
    package var sink: String { string("sink") == HTTPCollectorSink.sinkName ? "" : string("sink") }
    /// The sink events are delivered through, by name: the event_sink instance, or http-collector.
    package var sinkName: String { sink.isEmpty ? HTTPCollectorSink.sinkName : sink }
    package var maxNumRetries: Int { max(1, int("max_num_retries")) }
    package var retryBaseDelay: Double { seconds("retry_base_delay") }
    package var postTimeout: Double { seconds("post_timeout") }
    package var expireLocalEventsAfter: Double { seconds("expire_local_events_after") }
    package var sessionTimeout: Double { seconds("session_timeout") }
    package var defaultCampaignExpiration: Double { seconds("default_current_campaign_expiration") }
    package var paramCurrentCampaign: String { string("param_current_campaign") }
    package var paramCampaignEndTime: String { string("param_campaign_end_time") }
    package var eventNameField: String { string("event_name_field") }
    package var sessionDurationField: String { string("session_duration_field") }
    package var currentCampaignField: String { string("current_campaign_field") }
    package var lastCampaignField: String { string("last_campaign_field") }

    /// The OAuth 2 refresh-token grant's credentials (auth_*), shared with the XMLAPI client.
    package var oauthCredentials: OAuthTokenCache.Credentials {
        OAuthTokenCache.Credentials(
            tokenURL: string("auth_token_url"), clientID: string("auth_client_id"),
            clientSecret: string("auth_client_secret"), refreshToken: string("auth_refresh_token"))
    }

    /// The core values and identifiers added to every event (when set and not given by the caller).
    var coreValues: [(field: String, key: String)] {
        [
            ("Device Name", "device_name"), ("Device Version", "device_version"), ("OS Name", "os_name"), ("OS Version", "os_version"),
            ("App Name", "app_name"), ("App Version", "app_version"), ("Device Id", "device_id"), ("Mobile User Id", "mobile_user_id")
        ]
    }
}
