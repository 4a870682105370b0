import Foundation

/// The content service's delivery settings document (the ZBiM SDK's "Content Delivery"), fetched as
/// the provider's `settings` resource. It is read-only locally: the service decides the modes, the
/// remote disable and the pilot program membership; `hubhost hub status` shows them.
///
///     {"initialDownloadMode": "on_demand", "refreshMode": "recurring", "refreshInterval": 3600,
///      "isDisabled": false, "pilotProgram": {"id": "spring-2026", "enrolled": true}}
///
/// Every key is optional; a missing key takes its default. A value of the wrong type or an unknown
/// mode makes the whole document invalid (DeliverySettings.Invalid), so a typo on the service never
/// silently changes behavior: the last good document stays in use.
package struct DeliverySettings: Codable, Equatable, Sendable {
    /// When the first bundle is fetched.
    package enum InitialDownloadMode: String, Codable, Sendable, CaseIterable {
        /// At `hubhost serve` start-up.
        case immediate
        /// At the first present (the default).
        case onDemand = "on_demand"
    }

    /// What present does with content that may be out of date.
    package enum RefreshMode: String, Codable, Sendable, CaseIterable {
        /// Present waits for the sync when the content is stale (or fails with the reason).
        case dontShowStale = "dont_show_stale"
        /// Present shows the active bundle at once and refreshes in the background (the default).
        case staleOK = "stale_ok"
        /// `hubhost serve` re-syncs every `refreshInterval`; present behaves as stale_ok.
        case recurring
    }

    /// The service's pilot program: absent when there is none (everyone may present).
    package struct PilotProgram: Codable, Equatable, Sendable {
        /// The program's id; a new id means the service reset the program and everyone re-enrolls.
        package var id: String
        /// Whether the service enrolled this instance (decided from the location it was sent).
        package var enrolled: Bool

        package init(id: String, enrolled: Bool) {
            self.id = id
            self.enrolled = enrolled
        }
    }

    package var initialDownloadMode: InitialDownloadMode = .onDemand
    package var refreshMode: RefreshMode = .staleOK
    /// Seconds between re-syncs in `recurring` mode (default one hour).
    package var refreshInterval: Double = 3600
    /// The service disabled the Content Hub remotely.
    package var isDisabled = false
    package var pilotProgram: PilotProgram?

    package init() {}

    /// True when the service runs a pilot program and did not enroll this instance.
    package var refusedByPilotProgram: Bool { pilotProgram.map { !$0.enrolled } ?? false }

    /// Why a settings document cannot be used.
    package struct Invalid: Error, CustomStringConvertible, Equatable {
        package var reason: String
        package var description: String { "the content service's settings document is invalid: \(reason)" }
    }

    /// The document as sent: every key optional, types checked by the decoder.
    private struct Document: Decodable {
        var initialDownloadMode: String?
        var refreshMode: String?
        var refreshInterval: Double?
        var isDisabled: Bool?
        var pilotProgram: PilotProgram?
    }

    /// Parses the document (a JSON object), strictly on types and mode names.
    package static func parse(_ data: Data) throws -> DeliverySettings {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: data)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let key = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw Invalid(reason: "'\(key)' has the wrong type (\(context.debugDescription))")
        } catch let DecodingError.keyNotFound(key, context) {
            let path = (context.codingPath.map(\.stringValue) + [key.stringValue]).joined(separator: ".")
            throw Invalid(reason: "'\(path)' is missing")
        } catch {
            throw Invalid(reason: "not a JSON object")
        }
        var settings = DeliverySettings()
        if let mode = document.initialDownloadMode {
            guard let parsed = InitialDownloadMode(rawValue: mode) else {
                throw Invalid(
                    reason: "initialDownloadMode '\(mode)' is not one of: \(InitialDownloadMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            settings.initialDownloadMode = parsed
        }
        if let mode = document.refreshMode {
            guard let parsed = RefreshMode(rawValue: mode) else {
                throw Invalid(reason: "refreshMode '\(mode)' is not one of: \(RefreshMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            settings.refreshMode = parsed
        }
        if let interval = document.refreshInterval {
            guard interval > 0, interval.isFinite else { throw Invalid(reason: "'refreshInterval' must be a positive number of seconds") }
            settings.refreshInterval = interval
        }
        settings.isDisabled = document.isDisabled ?? false
        if let program = document.pilotProgram {
            guard !program.id.isEmpty else { throw Invalid(reason: "'pilotProgram.id' must not be empty") }
            settings.pilotProgram = program
        }
        return settings
    }
}
