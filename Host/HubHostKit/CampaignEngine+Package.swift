/// The campaign engine's initializer for HubHostTools (`hubhost bench campaigns` builds an engine
/// over its own store and operators), forwarded with `package` access from outside Campaigns/,
/// which another change owns for now. When that change has landed, mark the initializer itself
/// `package` in CampaignEngine.swift and delete this file.
extension CampaignEngine {
    package static func make(state: KeyValueState, operators: OperatorSet, pipeline: LogPipeline) throws -> CampaignEngine {
        try CampaignEngine(state: state, operators: operators, pipeline: pipeline)
    }
}
