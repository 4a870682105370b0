import Foundation

/// A campaign read from a file to preview (`hubhost campaigns preview FILE.json`), without loading it.
extension CampaignPreview {
    /// The largest campaign file a preview reads.
    public static let maxFileBytes = 4 << 20

    /// The campaign to preview in the file at `path`: a campaign list in the ping response format
    /// (what `campaigns sync --file` loads), one `{"campaignData": {...}}` of it, or the
    /// campaignData object alone. With several campaigns `id` picks one. Every refusal is a
    /// `CampaignParser.Problem` naming the file and why: not a regular file, larger than
    /// `maxFileBytes`, not JSON, a campaign the parser refuses (its reason), no campaign with `id`.
    public static func campaign(fromFile path: String, id: String? = nil) throws -> Campaign {
        let bytes: [UInt8]
        do { bytes = try BoundedFile.read(path: path, maxBytes: maxFileBytes) } catch {
            throw CampaignParser.Problem(description: "\(path) cannot be read: \(error.reason)")
        }
        guard case .object(let root)? = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes)) else {
            throw CampaignParser.Problem(description: "\(path) is not a JSON object")
        }
        // One campaign alone is read as a list of one.
        let list: Data
        if root["data"] != nil {
            list = Data(bytes)
        } else {
            let item: JSONValue = root["campaignData"] != nil ? .object(root) : .object(["campaignData": .object(root)])
            list = try JSONEncoder().encode(JSONValue.object(["data": .array([item])]))
        }
        let parsed: CampaignParser.Parsed
        do { parsed = try CampaignParser.parse(list) } catch { throw CampaignParser.Problem(description: "\(path): \(error)") }
        if let id {
            if let found = parsed.campaigns.first(where: { $0.id == id }) { return found }
            if let reason = parsed.skipped.first(where: { $0.hasPrefix("campaign \(id): ") }) {
                throw CampaignParser.Problem(description: "\(path): \(reason)")
            }
            let ids = parsed.campaigns.map(\.id)
            throw CampaignParser.Problem(
                description: "\(path) has no campaign \(id)" + (ids.isEmpty ? "" : " (it has \(ids.joined(separator: ", ")))"))
        }
        let total = parsed.campaigns.count + parsed.skipped.count
        if total == 1, let only = parsed.campaigns.first { return only }
        if total == 1, let reason = parsed.skipped.first { throw CampaignParser.Problem(description: "\(path): \(reason)") }
        if total == 0 { throw CampaignParser.Problem(description: "\(path) has no campaign") }
        throw CampaignParser.Problem(
            description: "\(path) has \(total) campaigns: name one with --id (\(parsed.campaigns.map(\.id).joined(separator: ", ")))")
    }
}
