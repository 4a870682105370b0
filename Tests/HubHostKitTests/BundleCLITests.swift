import Foundation
import XCTest

@testable import HubHostKit

/// `hubhost bundle build|verify|inspect` end to end through the built executable.
final class BundleCLITests: XCTestCase {
    func testBuildVerifyInspectAndRejections() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let keys = try TestKeys.make("RSA", name: "key", in: folder)
        let fixture = TestSupport.repository + "/Tests/Fixtures/content"

        let built = try TestSupport.hubhost(["bundle", "build", fixture, "-o", "content.sqlite3", "--key", keys.privateKey], in: folder)
        XCTAssertEqual(built.status, 0, built.stderr)
        XCTAssertTrue(built.stdout.contains("2 hubs, 3 channels, 6 articles, 2 resources, 1 notifications"), built.stdout)
        let sha = try XCTUnwrap(SHA256.hex(ofFile: folder + "/content.sqlite3"))
        XCTAssertTrue(built.stdout.contains("sha256  \(sha)"), built.stdout)
        let metadata = try BundleMetadata.read(path: folder + "/content.sqlite3.json")
        XCTAssertEqual(metadata.sha256, sha)
        XCTAssertEqual(metadata.version, "2026.11.22-1")

        let builtJSON = try TestSupport.hubhost(
            ["bundle", "build", fixture, "-o", "v2.sqlite3", "--key", keys.privateKey, "--version", "v2", "--json"], in: folder
        ).json(as: [String: Any].self)
        XCTAssertEqual((builtJSON["summary"] as? [String: Any])?["version"] as? String, "v2")
        XCTAssertEqual((builtJSON["summary"] as? [String: Any])?["articles"] as? Int, 6)
        XCTAssertEqual(builtJSON["sha256"] as? String, SHA256.hex(ofFile: folder + "/v2.sqlite3"))

        let valid = try TestSupport.hubhost(["bundle", "verify", "content.sqlite3", "--pubkey", keys.publicKey], in: folder)
        XCTAssertEqual(valid.status, 0, valid.stderr)
        XCTAssertTrue(valid.stdout.hasPrefix("valid"), valid.stdout)
        let validJSON = try TestSupport.hubhost(["bundle", "verify", "content.sqlite3", "--pubkey", keys.publicKey, "--json"], in: folder).json(
            as: [String: Any].self)
        XCTAssertEqual(validJSON["valid"] as? Bool, true)

        // One byte flipped in a copy that keeps the original metadata.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/content.sqlite3"))
        bytes[bytes.count / 3] ^= 0x10
        try bytes.write(to: URL(fileURLWithPath: folder + "/tampered.sqlite3"))
        let tampered = try TestSupport.hubhost(
            ["bundle", "verify", "tampered.sqlite3", "--pubkey", keys.publicKey, "--metadata", "content.sqlite3.json"], in: folder)
        XCTAssertEqual(tampered.status, 1)
        XCTAssertTrue(tampered.stderr.contains("invalid (tampered)"), tampered.stderr)
        let tamperedJSON = try TestSupport.hubhost(
            ["bundle", "verify", "tampered.sqlite3", "--pubkey", keys.publicKey, "--metadata", "content.sqlite3.json", "--json"], in: folder)
        XCTAssertEqual(tamperedJSON.status, 1)
        XCTAssertEqual(try tamperedJSON.json(as: [String: Any].self)["rejection"] as? String, "tampered")

        try bytes.prefix(1000).write(to: URL(fileURLWithPath: folder + "/truncated.sqlite3"))
        let truncated = try TestSupport.hubhost(
            ["bundle", "verify", "truncated.sqlite3", "--pubkey", keys.publicKey, "--metadata", "content.sqlite3.json"], in: folder)
        XCTAssertEqual(truncated.status, 1)
        XCTAssertTrue(truncated.stderr.contains("invalid (truncated)"), truncated.stderr)

        let other = try TestKeys.make("EC", name: "other", in: folder)
        let wrongKey = try TestSupport.hubhost(["bundle", "verify", "content.sqlite3", "--pubkey", other.publicKey], in: folder)
        XCTAssertEqual(wrongKey.status, 1)
        XCTAssertTrue(wrongKey.stderr.contains("invalid (badSignature)"), wrongKey.stderr)

        try FileManager.default.copyItem(atPath: folder + "/content.sqlite3", toPath: folder + "/bare.sqlite3")
        let unsigned = try TestSupport.hubhost(["bundle", "verify", "bare.sqlite3", "--pubkey", keys.publicKey], in: folder)
        XCTAssertEqual(unsigned.status, 1)
        XCTAssertTrue(unsigned.stderr.contains("invalid (unsigned)") && unsigned.stderr.contains("bare.sqlite3.json"), unsigned.stderr)

        let inspected = try TestSupport.hubhost(["bundle", "inspect", "content.sqlite3"], in: folder)
        XCTAssertEqual(inspected.status, 0, inspected.stderr)
        XCTAssertTrue(inspected.stdout.contains("hub news: News  [news, local]"), inspected.stdout)
        XCTAssertTrue(inspected.stdout.contains("    article cooking/recipes/pancakes: Pancakes  [food, breakfast]"), inspected.stdout)
        XCTAssertTrue(inspected.stdout.contains("resources/site.css  text/css"), inspected.stdout)
        XCTAssertTrue(inspected.stdout.contains("market-reminder  2026-12-05T08:00:00Z"), inspected.stdout)
        let inspectedJSON = try TestSupport.hubhost(["bundle", "inspect", "content.sqlite3", "--json"], in: folder).json(as: [String: Any].self)
        let hubs = try XCTUnwrap(inspectedJSON["hubs"] as? [[String: Any]])
        XCTAssertEqual(hubs.map { $0["id"] as? String }, ["news", "cooking"])
        let notABundle = try TestSupport.hubhost(["bundle", "inspect", "key.pem"], in: folder)
        XCTAssertEqual(notABundle.status, 1)
        XCTAssertTrue(notABundle.stderr.contains("is not a hubhost content bundle"), notABundle.stderr)
    }

    func testBuildErrorsNameTheFileAndWriteNothing() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let keys = try TestKeys.make("EC", name: "key", in: folder)
        try TestSupport.write("---\ntitle: [unclosed\n---\n", to: folder + "/content/hub/channel/a.md")
        try TestSupport.write("x", to: folder + "/content/stray.txt")
        let result = try TestSupport.hubhost(["bundle", "build", "content", "-o", "out.sqlite3", "--key", keys.privateKey], in: folder)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("2 problems"), result.stderr)
        XCTAssertTrue(result.stderr.contains("content/hub/channel/a.md:2: invalid YAML"), result.stderr)
        XCTAssertTrue(result.stderr.contains("content/stray.txt: a file at the hub level"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/out.sqlite3"))
        let jsonResult = try TestSupport.hubhost(["bundle", "build", "content", "-o", "out.sqlite3", "--key", keys.privateKey, "--json"], in: folder)
        XCTAssertEqual(jsonResult.status, 1)
        let problems = try XCTUnwrap(try jsonResult.json(as: [String: Any].self)["problems"] as? [[String: Any]])
        XCTAssertEqual(problems.count, 2)
        XCTAssertEqual(problems.first { ($0["path"] as? String)?.hasSuffix("a.md") == true }?["line"] as? Int, 2)

        let badKey = try TestSupport.hubhost(
            ["bundle", "build", TestSupport.repository + "/Tests/Fixtures/content", "-o", "out.sqlite3", "--key", keys.publicKey], in: folder)
        XCTAssertEqual(badKey.status, 1)
        XCTAssertTrue(badKey.stderr.contains("is not a PEM private key"), badKey.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/out.sqlite3"), "the key is checked before building")
    }

    func testHelpTexts() throws {
        let help = try TestSupport.hubhost(["bundle", "--help"], in: NSTemporaryDirectory())
        XCTAssertTrue(help.stdout.contains("build") && help.stdout.contains("verify") && help.stdout.contains("inspect"), help.stdout)
        XCTAssertTrue(help.stdout.contains("openssl pkey -in key.pem -pubout -outform DER -out pubkey.der"), help.stdout)
        let build = try TestSupport.hubhost(["bundle", "build", "--help"], in: NSTemporaryDirectory())
        XCTAssertTrue(build.stdout.contains("--key") && build.stdout.contains("FILE.json"), build.stdout)
    }
}
