import ArgumentParser
import HubHostKit

struct AdvertiserIDCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertiser-id",
        abstract: "Show the advertiser ID the advertiser-ID delegate chain decides, or that none is used.")

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    func run() throws {
        let host = try manifestOption.startHost()
        defer { host.shutdown() }
        let decision = host.advertiserID()
        if output.json {
            Output.json(decision)
        } else if let id = decision.advertiserID {
            print("\(id)  (decided by '\(decision.decidedBy ?? "-")')")
        } else {
            print("none: \(decision.reason ?? "no advertiser ID")\(decision.decidedBy.map { " (decided by '\($0)')" } ?? "")")
        }
    }
}

struct LocationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "location",
        abstract: "Show the location the location delegates answer.",
        discussion: "Exits 1 when no location delegate has a location.")

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    struct Report: Encodable {
        var instance: String?
        var location: Location?
    }

    func run() throws {
        let host = try manifestOption.startHost()
        defer { host.shutdown() }
        let answer = host.location()
        if output.json {
            Output.json(Report(instance: answer?.instance, location: answer?.location))
        } else if let answer {
            print("\(Self.describe(answer.location))  (from '\(answer.instance)')")
        } else {
            print("no location: no location delegate answered")
        }
        if answer == nil { throw ExitCode.failed }
    }

    static func describe(_ location: Location) -> String {
        var parts: [String] = []
        if let lat = location.latitude, let lon = location.longitude { parts.append("\(lat), \(lon)") }
        if let id = location.locationID { parts.append("id \(id)") }
        if let name = location.name { parts.append(name) }
        if let address = location.address { parts.append(address) }
        return parts.joined(separator: "; ")
    }
}
