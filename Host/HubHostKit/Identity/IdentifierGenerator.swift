import Foundation

/// Makes mobile user ids and audit record keys (the Engage SDK's mobileUserIdGeneratorClassName and
/// auditRecordPrimaryKeyGeneratorClassName): a `user_id_generator` plugin instance, or the built-in
/// random UUID (the Engage SDK's EngageDefaultUUIDGenerator) when none is configured.
package protocol IdentifierGenerator: Sendable {
    /// Who generates, for messages (an instance id or "built-in UUID").
    var name: String { get }
    func generate() throws -> String
}

/// A random (version 4) UUID, upper-case as Foundation writes it.
package struct BuiltInUUIDGenerator: IdentifierGenerator {
    package init() {}
    package var name: String { "built-in UUID" }
    package func generate() throws -> String { UUID().uuidString }
}
