import Foundation

/// The mobile identity manager's settings: the Engage SDK's Recipient-> and AuditRecord->
/// configuration values under the SDK's names, with its defaults, plus what the SDK keeps elsewhere
/// (General->databaseListId, the Engage host, the OAuth values) and the audit table's id, which its
/// configuration documentation omits. `identity:` in plugins.yaml.
package struct IdentitySettings: Sendable {
    package static let schema = ConfigSchema(keys: [
        ConfigKey(
            key: "host", type: .string, defaultValue: .string(""),
            doc: "The Engage base URL; XMLAPI requests go to {host}/XMLAPI (EngageSDK initializeSDKClient host:)."),
        ConfigKey(
            key: "databaseListId", type: .string, defaultValue: .string(""),
            doc: "The Engage database (recipient list) id, a number (General->databaseListId).", pattern: "[0-9]{0,18}"),
        ConfigKey(
            key: "enableAutoAnonymousTracking", type: .bool, defaultValue: .bool(true),
            doc: "Generate a mobile user id when there is none (Recipient->enableAutoAnonymousTracking)."),
        ConfigKey(
            key: "mobileUserIdGenerator", type: .string, defaultValue: .string(""),
            doc:
                "The user_id_generator plugin instance that makes mobile user ids; empty: a built-in random UUID (Recipient->mobileUserIdGeneratorClassName)."
        ),
        ConfigKey(
            key: "mobileUserIdColumn", type: .string, defaultValue: .string("Mobile User Id"),
            doc: "Column holding the mobile user id (Recipient->mobileUserIdColumn)."),
        ConfigKey(
            key: "mergedRecipientIdColumn", type: .string, defaultValue: .string("Merged Recipient Id"),
            doc: "Column stamped on a merged-away recipient with the recipient it was merged into (Recipient->mergedRecipientIdColumn)."),
        ConfigKey(
            key: "mergedDateColumn", type: .string, defaultValue: .string("Merged Date"),
            doc: "Column stamped on a merged-away recipient with the merge's date (Recipient->mergedDateColumn)."),
        ConfigKey(
            key: "mergeHistoryInMarketingDatabase", type: .bool, defaultValue: .bool(true),
            doc: "Stamp the merged recipient id and date on the old recipient (Recipient->mergeHistoryInMarketingDatabase)."),
        ConfigKey(
            key: "mergeHistoryInAuditRecordTable", type: .bool, defaultValue: .bool(false),
            doc: "Write one audit row per merge through InsertUpdateRelationalTable (AuditRecord->mergeHistoryInAuditRecordTable)."),
        ConfigKey(
            key: "auditRecordListId", type: .string, defaultValue: .string(""),
            doc:
                "The audit record relational table's id, a number; required with mergeHistoryInAuditRecordTable (the Engage SDK's AuditRecord->auditRecordListId).",
            pattern: "[0-9]{0,18}"),
        ConfigKey(
            key: "auditRecordPrimaryKeyColumnName", type: .string, defaultValue: .string("Audit Record Id"),
            doc: "The audit table's primary-key column (AuditRecord->auditRecordPrimaryKeyColumnName)."),
        ConfigKey(
            key: "auditRecordPrimaryKeyGenerator", type: .string, defaultValue: .string(""),
            doc:
                "The user_id_generator plugin instance that makes audit primary keys; empty: a built-in random UUID (AuditRecord->auditRecordPrimaryKeyGeneratorClassName)."
        ),
        ConfigKey(
            key: "oldRecipientIdColumnName", type: .string, defaultValue: .string("Old Recipient Id"),
            doc: "The audit table's column for the merged-away recipient (AuditRecord->oldRecipientIdColumnName)."),
        ConfigKey(
            key: "newRecipientIdColumnName", type: .string, defaultValue: .string("New Recipient Id"),
            doc:
                "The audit table's column for the recipient merged into (also accepted with the Engage SDK documentation's spelling AuditRecord>newRecipientIdColumnName)."
        ),
        ConfigKey(
            key: "createDateColumnName", type: .string, defaultValue: .string("Create Date"),
            doc: "The audit table's column for the merge's time (AuditRecord->createDateColumnName)."),
        ConfigKey(
            key: "createdFrom", type: .int, defaultValue: .int(1),
            doc: "AddRecipient's CREATED_FROM (0 imported, 1 added manually, 2 opted in, 3 from a tracking database).", range: .between(0, 3)),
        ConfigKey(
            key: "requestTimeout", type: .duration, defaultValue: .double(30), doc: "Deadline of one XMLAPI request.",
            range: .positive(atMost: SafeTime.maxDurationSeconds)),
        ConfigKey(
            key: "maxRetries", type: .int, defaultValue: .int(3),
            doc: "Retries of a request that got no answer or a 5xx (faults are never retried).", range: .between(0, 100)),
        ConfigKey(
            key: "retryBaseDelay", type: .duration, defaultValue: .double(1), doc: "First retry delay; doubled each retry, with jitter.",
            range: .between(0, SafeTime.maxDurationSeconds)),
        ConfigKey(
            key: "authTokenUrl", type: .string, defaultValue: .string(""),
            doc: "OAuth 2 token endpoint for the XMLAPI; empty: events.auth_token_url (one token cache for both)."),
        ConfigKey(key: "authClientId", type: .string, defaultValue: .string(""), doc: "OAuth 2 client id; empty: events.auth_client_id."),
        ConfigKey(key: "authClientSecret", type: .string, defaultValue: .string(""), doc: "OAuth 2 client secret; empty: events.auth_client_secret."),
        ConfigKey(key: "authRefreshToken", type: .string, defaultValue: .string(""), doc: "OAuth 2 refresh token; empty: events.auth_refresh_token.")
    ])

    /// Keys accepted as the Engage SDK's documentation writes them, mapped to hubhost's: its group prefixes
    /// ("Recipient->", "AuditRecord->", "General->") and its misspelt "AuditRecord>newRecipientIdColumnName".
    package static let seedPrefixes = ["Recipient->", "AuditRecord->", "AuditRecord>", "General->"]

    package var values: [String: PluginValue]
    package var lines: [String: Int]

    package init(values: [String: PluginValue] = [:], lines: [String: Int] = [:]) {
        self.values = Self.schema.withDefaults(values)
        self.lines = lines
    }

    /// A value by key, of the type the schema gives it (the schema checked it; "" / false / 0 otherwise).
    package func string(_ key: String) -> String { values[key]?.stringValue ?? "" }
    func bool(_ key: String) -> Bool { values[key]?.boolValue ?? false }
    func seconds(_ key: String) -> Double { values[key]?.doubleValue ?? 0 }
    func int(_ key: String) -> Int { values[key]?.intValue.map { Int(clamping: $0) } ?? 0 }

    package var host: String { string("host") }
    package var listID: String { string("databaseListId") }
    package var autoAnonymousTracking: Bool { bool("enableAutoAnonymousTracking") }
    package var mobileUserIdColumn: String { string("mobileUserIdColumn") }
    package var mergedRecipientIdColumn: String { string("mergedRecipientIdColumn") }
    package var mergedDateColumn: String { string("mergedDateColumn") }
    package var mergeHistoryInMarketingDatabase: Bool { bool("mergeHistoryInMarketingDatabase") }
    package var mergeHistoryInAuditRecordTable: Bool { bool("mergeHistoryInAuditRecordTable") }
    package var auditRecordListID: String { string("auditRecordListId") }
    package var createdFrom: Int { int("createdFrom") }

    /// The XMLAPI client's settings; the OAuth values fall back to the event engine's, so both
    /// share one token (OAuthTokenCache is keyed by the credentials).
    package func clientSettings(events: EventSettings) -> XMLAPIClient.Settings {
        let fallback = events.oauthCredentials
        func pick(_ key: String, _ other: String) -> String { string(key).isEmpty ? other : string(key) }
        let credentials = OAuthTokenCache.Credentials(
            tokenURL: pick("authTokenUrl", fallback.tokenURL), clientID: pick("authClientId", fallback.clientID),
            clientSecret: pick("authClientSecret", fallback.clientSecret),
            refreshToken: pick("authRefreshToken", fallback.refreshToken))
        return XMLAPIClient.Settings(
            host: host, credentials: credentials, timeoutSeconds: max(0.001, seconds("requestTimeout")),
            maxRetries: min(max(0, int("maxRetries")), 20), retryBaseDelay: max(0, seconds("retryBaseDelay")))
    }
}
