import Foundation
import XCTest

@testable import HubHostKit

/// minisign-compatible signatures: Debian's minisign (scripts/debian-packages.txt) signs and
/// hubhost verifies, hubhost signs and minisign verifies; hostile keys and signatures are refused
/// with a message saying what is wrong; `plugins trust` edits plugins.yaml without rewriting it.
final class MinisignTests: XCTestCase {
    static let minisign = "/usr/bin/minisign"

    private func requireMinisign() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: Self.minisign), "minisign is not installed (scripts/debian-packages.txt)")
    }

    /// A key pair made by `minisign -G -W` in `folder`: (public key file, secret key file).
    private func minisignKeyPair(in folder: String, name: String = "m") throws -> (pub: String, key: String) {
        let pub = folder + "/\(name).pub"
        let key = folder + "/\(name).key"
        let made = try TestSupport.run(Self.minisign, ["-G", "-W", "-p", pub, "-s", key], currentDirectory: folder)
        XCTAssertEqual(made.status, 0, made.stderr)
        return (pub, key)
    }

    private func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    private func assertRefused(_ expected: MinisignError, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            XCTAssertEqual(error as? MinisignError, expected, "\(error)", file: file, line: line)
        }
    }

    // MARK: minisign signs, hubhost verifies

    func testMinisignSignaturesVerifyHashedAndLegacy() throws {
        try requireMinisign()
        let folder = try TestSupport.temporaryFolder(self)
        let keys = try minisignKeyPair(in: folder)
        let file = folder + "/plugin.tar"
        try write(Array("a plugin package\n".utf8) + [UInt8](repeating: 7, count: 3_000_000), to: file)
        let signed = try TestSupport.run(Self.minisign, ["-S", "-s", keys.key, "-m", file, "-t", "acme 1.2.3"])
        XCTAssertEqual(signed.status, 0, signed.stderr)
        let verified = try Minisign.verify(fileAt: file, publicKeyPath: keys.pub)
        XCTAssertEqual(verified.algorithm, .hashed)
        XCTAssertEqual(verified.trustedComment, "acme 1.2.3")
        XCTAssertEqual(verified.keyID, try MinisignPublicKey(contentsOf: keys.pub).keyIDText)
        XCTAssertTrue(try String(contentsOfFile: keys.pub, encoding: .utf8).contains(verified.keyID), "the key id minisign prints")
        // The same signature from bytes in memory.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        XCTAssertNoThrow(
            try Minisign.verify(
                bytes, signature: MinisignSignature(contentsOf: file + ".minisig"), publicKey: MinisignPublicKey(contentsOf: keys.pub)))

        let legacy = try TestSupport.run(Self.minisign, ["-S", "-l", "-s", keys.key, "-m", file, "-x", file + ".legacy"])
        XCTAssertEqual(legacy.status, 0, legacy.stderr)
        let old = try Minisign.verify(fileAt: file, signaturePath: file + ".legacy", publicKeyPath: keys.pub)
        XCTAssertEqual(old.algorithm, .legacy)
        var changed = bytes
        changed[0] ^= 1
        assertRefused(.signatureMismatch) {
            try Minisign.verify(
                changed, signature: MinisignSignature(contentsOf: file + ".legacy"), publicKey: MinisignPublicKey(contentsOf: keys.pub))
        }
    }

    /// minisign prints a key id without leading zeros (one key in sixteen has fewer than 16 digits):
    /// hubhost prints ids the same way and still matches an id written padded to 16 digits.
    func testKeyIDsWithLeadingZerosPrintAsMinisignPrintsThem() throws {
        try requireMinisign()
        let folder = try TestSupport.temporaryFolder(self)
        let signer = try MinisignSecretKey.generate()
        // A public key whose id's most significant byte (the last of the 8, little-endian) is 0x0a.
        let generated = try MinisignSecretKey.generate().publicKey
        let zeroLed = MinisignPublicKey(keyID: Array(generated.keyID.dropLast()) + [0x0a], key: generated.key)
        XCTAssertEqual(zeroLed.keyIDText.count, 15)
        XCTAssertFalse(zeroLed.keyIDText.hasPrefix("0"))
        try Data(zeroLed.fileContents.utf8).write(to: URL(fileURLWithPath: folder + "/z.pub"))
        try write(Array("x".utf8), to: folder + "/f")
        try write(try signer.sign(Array("x".utf8), trustedComment: "t").fileContents, to: folder + "/f.minisig")
        // minisign refuses the other key's signature and prints both ids: they are hubhost's texts.
        let checked = try TestSupport.run(Self.minisign, ["-V", "-p", folder + "/z.pub", "-m", folder + "/f"])
        XCTAssertNotEqual(checked.status, 0)
        let printed = checked.stdout + checked.stderr
        XCTAssertTrue(printed.contains("is \(signer.publicKey.keyIDText)\n"), printed)
        XCTAssertTrue(printed.hasSuffix("is \(zeroLed.keyIDText)\n"), printed)
        // Padded, lower-case or unpadded, the id names the key; another id, junk or nothing does not.
        XCTAssertTrue(zeroLed.hasKeyID("0" + zeroLed.keyIDText))
        XCTAssertTrue(zeroLed.hasKeyID(zeroLed.keyIDText.lowercased()))
        XCTAssertTrue(zeroLed.hasKeyID(zeroLed.keyIDText))
        XCTAssertFalse(zeroLed.hasKeyID(signer.publicKey.keyIDText))
        XCTAssertFalse(zeroLed.hasKeyID("+" + zeroLed.keyIDText))
        XCTAssertFalse(zeroLed.hasKeyID("00" + zeroLed.keyIDText))
        XCTAssertFalse(zeroLed.hasKeyID(""))
        XCTAssertFalse(zeroLed.hasKeyID(nil))
    }

    /// A key minisign made signs in hubhost too, and minisign verifies that.
    func testMinisignSecretKeySignsInHubhost() throws {
        try requireMinisign()
        let folder = try TestSupport.temporaryFolder(self)
        let keys = try minisignKeyPair(in: folder)
        let file = folder + "/f"
        try write(Array("x".utf8), to: file)
        let secret = try MinisignSecretKey(contentsOf: keys.key)
        XCTAssertEqual(secret.publicKey, try MinisignPublicKey(contentsOf: keys.pub))
        try write(try secret.sign(Array("x".utf8), trustedComment: "by hubhost").fileContents, to: file + ".minisig")
        let checked = try TestSupport.run(Self.minisign, ["-V", "-p", keys.pub, "-m", file])
        XCTAssertEqual(checked.status, 0, checked.stderr)
        XCTAssertTrue((checked.stdout + checked.stderr).contains("by hubhost"), checked.stdout)
    }

    // MARK: hubhost signs, minisign verifies

    func testHubhostKeygenAndSignVerifyWithMinisign() throws {
        try requireMinisign()
        let folder = try TestSupport.temporaryFolder(self)
        let made = try TestSupport.hubhost(["plugins", "keygen", "--json"], in: folder)
        XCTAssertEqual(made.status, 0, made.stderr)
        let report = try XCTUnwrap(TestSupport.json(made.stdout) as? [String: Any])
        XCTAssertEqual(report["publicKeyFile"] as? String, "hubhost.pub")
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: folder + "/hubhost.key")[.posixPermissions] as? Int)
        XCTAssertEqual(mode, 0o600, "the secret key is readable by its owner only")
        let again = try TestSupport.hubhost(["plugins", "keygen"], in: folder)
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("already exists"), again.stderr)

        try write(Array("plugin bytes".utf8), to: folder + "/p.so")
        let signed = try TestSupport.hubhost(["plugins", "sign", "p.so", "-t", "acme-weather 2.0"], in: folder)
        XCTAssertEqual(signed.status, 0, signed.stderr)
        let checked = try TestSupport.run(Self.minisign, ["-V", "-p", folder + "/hubhost.pub", "-m", folder + "/p.so"])
        XCTAssertEqual(checked.status, 0, checked.stderr + checked.stdout)
        XCTAssertTrue((checked.stdout + checked.stderr).contains("acme-weather 2.0"), checked.stdout)
        XCTAssertEqual(
            try Minisign.verify(fileAt: folder + "/p.so", publicKeyPath: folder + "/hubhost.pub").keyID, report["keyID"] as? String)
        // minisign signs with hubhost's secret key as well.
        let resigned = try TestSupport.run(Self.minisign, ["-S", "-s", folder + "/hubhost.key", "-m", folder + "/p.so", "-x", folder + "/p.sig2"])
        XCTAssertEqual(resigned.status, 0, resigned.stderr)
        XCTAssertNoThrow(try Minisign.verify(fileAt: folder + "/p.so", signaturePath: folder + "/p.sig2", publicKeyPath: folder + "/hubhost.pub"))
        // A changed file fails minisign's check too.
        try write(Array("plugin bytez".utf8), to: folder + "/p.so")
        XCTAssertNotEqual(try TestSupport.run(Self.minisign, ["-V", "-p", folder + "/hubhost.pub", "-m", folder + "/p.so"]).status, 0)
    }

    // MARK: hostile input

    func testHostileSignaturesAreRefusedWithSpecificMessages() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let key = try MinisignSecretKey.generate()
        let other = try MinisignSecretKey.generate()
        let data = Array("the package".utf8)
        let signature = try key.sign(data, trustedComment: "timestamp:1\tfile:p")

        var changed = data
        changed[3] ^= 0x20
        assertRefused(.signatureMismatch) { try Minisign.verify(changed, signature: signature, publicKey: key.publicKey) }
        assertRefused(.keyIDMismatch(signature: other.publicKey.keyIDText, key: key.publicKey.keyIDText)) {
            try Minisign.verify(data, signature: other.sign(data, trustedComment: "x"), publicKey: key.publicKey)
        }
        // Another key's signature relabelled with this key's id still fails.
        var relabelled = try other.sign(data, trustedComment: "x")
        relabelled.keyID = key.keyID
        assertRefused(.signatureMismatch) { try Minisign.verify(data, signature: relabelled, publicKey: key.publicKey) }

        // The trusted comment edited in the file.
        let text = String(decoding: signature.fileContents, as: UTF8.self).replacingOccurrences(of: "file:p", with: "file:q")
        let tampered = try MinisignSignature(fileContents: Array(text.utf8))
        assertRefused(.trustedCommentMismatch) { try Minisign.verify(data, signature: tampered, publicKey: key.publicKey) }

        var lines = String(decoding: signature.fileContents, as: UTF8.self).components(separatedBy: "\n")
        func parse(_ edited: [String]) throws { _ = try MinisignSignature(fileContents: Array(edited.joined(separator: "\n").utf8)) }
        var truncated = lines
        truncated[1] = String(lines[1].prefix(41))
        assertRefused(.notBase64(what: "signature", line: 2)) { try parse(truncated) }
        var short = lines
        short[1] = Data(Array("ED".utf8) + [UInt8](repeating: 1, count: 30)).base64EncodedString()
        assertRefused(.wrongLength(what: "signature", expected: 74, found: 32)) { try parse(short) }
        var garbage = lines
        garbage[3] = "!!!not base64!!!"
        assertRefused(.notBase64(what: "global signature", line: 4)) { try parse(garbage) }
        var algorithm = lines
        var first = [UInt8](Data(base64Encoded: lines[1])!)
        first[0] = UInt8(ascii: "X")
        algorithm[1] = Data(first).base64EncodedString()
        assertRefused(.unknownAlgorithm(what: "signature", found: "XD")) { try parse(algorithm) }
        var noTrusted = lines
        noTrusted[2] = "comment: x"
        assertRefused(.missingPrefix(what: "signature file", line: 3, prefix: "trusted comment: ")) { try parse(noTrusted) }
        assertRefused(.lineCount(what: "signature file", expected: "4 lines", found: 3)) { try parse(Array(lines.prefix(3))) }
        lines.insert("extra", at: 2)
        assertRefused(.lineCount(what: "signature file", expected: "4 lines", found: 5)) { try parse(lines) }
        assertRefused(.lineCount(what: "signature file", expected: "4 lines", found: 1)) { _ = try MinisignSignature(fileContents: []) }

        // A 10 MB signature file is refused without being read whole.
        let huge = folder + "/huge.minisig"
        try write([UInt8](repeating: UInt8(ascii: "A"), count: 10_000_000), to: huge)
        assertRefused(.tooLarge(what: "signature file", limit: MinisignSignature.maximumFileSize)) { _ = try MinisignSignature(contentsOf: huge) }
        XCTAssertEqual(
            MinisignError.tooLarge(what: "signature file", limit: 16_384).description, "the signature file is larger than 16384 bytes; no real one is"
        )
    }

    func testHostilePublicAndSecretKeysAreRefused() throws {
        let key = try MinisignSecretKey.generate()
        XCTAssertEqual(try MinisignPublicKey(base64: key.publicKey.base64), key.publicKey)
        XCTAssertEqual(try MinisignPublicKey(fileContents: Array(key.publicKey.fileContents.utf8)), key.publicKey)
        var bytes = [UInt8](Data(base64Encoded: key.publicKey.base64)!)
        bytes[1] = UInt8(ascii: "D")
        assertRefused(.unknownAlgorithm(what: "public key", found: "ED")) { _ = try MinisignPublicKey(base64: Data(bytes).base64EncodedString()) }
        assertRefused(.wrongLength(what: "public key", expected: 42, found: 41)) {
            _ = try MinisignPublicKey(base64: Data(bytes.dropLast()).base64EncodedString())
        }
        assertRefused(.notBase64(what: "public key", line: 1)) { _ = try MinisignPublicKey(base64: String(key.publicKey.base64.dropLast(3))) }
        assertRefused(.missingPrefix(what: "public key file", line: 1, prefix: "untrusted comment: ")) {
            _ = try MinisignPublicKey(fileContents: Array("hello\n\(key.publicKey.base64)\n".utf8))
        }
        assertRefused(.lineCount(what: "public key file", expected: "2 lines", found: 1)) {
            _ = try MinisignPublicKey(fileContents: Array(key.publicKey.base64.utf8))
        }
        // The secret key round-trips; an encrypted one and a damaged one are refused.
        let secretText = key.fileContents
        let reread = try MinisignSecretKey(fileContents: Array(secretText.utf8))
        XCTAssertEqual(reread.publicKey, key.publicKey)
        let secretLines = secretText.components(separatedBy: "\n")
        var secret = [UInt8](Data(base64Encoded: secretLines[1])!)
        var encrypted = secret
        encrypted[2] = UInt8(ascii: "S")
        encrypted[3] = UInt8(ascii: "c")
        assertRefused(.encryptedSecretKey(path: "k")) {
            _ = try MinisignSecretKey(fileContents: Array("\(secretLines[0])\n\(Data(encrypted).base64EncodedString())\n".utf8), source: "k")
        }
        XCTAssertTrue(MinisignError.encryptedSecretKey(path: "k").description.contains("minisign -G -W"))
        secret[100] ^= 1  // in the public half of the 64-byte secret key
        assertRefused(.corruptSecretKey("its public half does not belong to its secret half")) {
            _ = try MinisignSecretKey(fileContents: Array("\(secretLines[0])\n\(Data(secret).base64EncodedString())\n".utf8))
        }
    }

    // MARK: plugins trust

    func testPluginsTrustKeepsCommentsAndRefusesADuplicateName() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let manifest = folder + "/plugins.yaml"
        let original = """
            # The host manifest of the signing test.
            data_dir: .state   # beside this file

            # No plugins yet.
            plugins: []
            # The end.

            """
        try TestSupport.write(original, to: manifest)
        let made = try TestSupport.hubhost(["plugins", "keygen", "-p", "a.pub", "-s", "a.key"], in: folder)
        XCTAssertEqual(made.status, 0, made.stderr)
        let trusted = try TestSupport.hubhost(
            ["plugins", "trust", "a.pub", "--name", "acme", "--ids", "acme-*", "--json"], manifest: manifest, in: folder)
        XCTAssertEqual(trusted.status, 0, trusted.stderr)
        let afterFirst = try String(contentsOfFile: manifest, encoding: .utf8)
        XCTAssertTrue(afterFirst.hasPrefix(original), "the file is appended to, not rewritten:\n\(afterFirst)")
        let key = try MinisignPublicKey(contentsOf: folder + "/a.pub")
        var loaded = try HostManifest.load(path: manifest)
        XCTAssertEqual(loaded.diagnostics, [])
        XCTAssertEqual(loaded.trust.entries.map(\.name), ["acme"])
        XCTAssertEqual(loaded.trust.entries.first?.key, key)
        XCTAssertEqual(loaded.trust.keys(for: "acme-weather").count, 1)
        XCTAssertEqual(loaded.trust.keys(for: "other").count, 0)

        // A second key goes right after the first item, before the comment that follows the list.
        try TestSupport.write(afterFirst + "# trailing comment\nlogging:\n  severity: info\n", to: manifest)
        XCTAssertEqual(try TestSupport.hubhost(["plugins", "sign", "--help"], in: folder).status, 0)
        XCTAssertEqual(try TestSupport.hubhost(["plugins", "keygen", "-p", "b.pub", "-s", "b.key"], in: folder).status, 0)
        let second = try TestSupport.hubhost(["plugins", "trust", "b.pub", "--name", "beta"], manifest: manifest, in: folder)
        XCTAssertEqual(second.status, 0, second.stderr)
        let afterSecond = try String(contentsOfFile: manifest, encoding: .utf8)
        for comment in ["# The host manifest of the signing test.", "# beside this file", "# No plugins yet.", "# The end.", "# trailing comment"] {
            XCTAssertTrue(afterSecond.contains(comment), comment)
        }
        let betaLine = try XCTUnwrap(afterSecond.range(of: "- name: \"beta\""))
        let trailing = try XCTUnwrap(afterSecond.range(of: "# trailing comment"))
        XCTAssertLessThan(betaLine.lowerBound, trailing.lowerBound)
        loaded = try HostManifest.load(path: manifest)
        XCTAssertEqual(loaded.diagnostics, [])
        XCTAssertEqual(loaded.trust.entries.map(\.name), ["acme", "beta"])
        XCTAssertEqual(loaded.trust.entries.map(\.ids), ["acme-*", "*"])
        XCTAssertEqual(loaded.logging.severity.name, "info")

        // The same name again: refused, the file unchanged.
        let duplicate = try TestSupport.hubhost(["plugins", "trust", "b.pub", "--name", "acme"], manifest: manifest, in: folder)
        XCTAssertEqual(duplicate.status, 1)
        XCTAssertTrue(duplicate.stderr.contains("already trusts a key named 'acme'"), duplicate.stderr)
        XCTAssertEqual(try String(contentsOfFile: manifest, encoding: .utf8), afterSecond)
        // A file that is not a public key: refused, unchanged.
        let notAKey = try TestSupport.hubhost(["plugins", "trust", "plugins.yaml", "--name", "x"], manifest: manifest, in: folder)
        XCTAssertEqual(notAKey.status, 1)
        XCTAssertTrue(notAKey.stderr.contains("public key file"), notAKey.stderr)
        XCTAssertEqual(try String(contentsOfFile: manifest, encoding: .utf8), afterSecond)
    }

    /// A trust: section written in flow style is not edited; a hand-written duplicate is a diagnostic.
    func testTrustSectionParsingAndEditorRefusals() throws {
        let key = try MinisignSecretKey.generate().publicKey
        XCTAssertThrowsError(try TrustListEditor.adding(.init(name: "a", key: key), to: "trust: []\n")) { error in
            XCTAssertTrue("\(error)".contains("block list"), "\(error)")
        }
        let folder = try TestSupport.temporaryFolder(self)
        let manifest = folder + "/plugins.yaml"
        try TestSupport.write(
            "trust:\n- name: a\n  key: \(key.base64)\n- name: a\n  key: \(key.base64)\n- name: b\n  key: RWQnotakey\n  ids: 'bad pattern'\n",
            to: manifest)
        let loaded = try HostManifest.load(path: manifest)
        let messages = loaded.problems(inSections: ["trust"]).map(\.message)
        XCTAssertEqual(loaded.trust.entries.map(\.name), ["a"])
        XCTAssertTrue(messages.contains { $0.contains("duplicate trust name 'a'") }, "\(messages)")
        XCTAssertTrue(messages.contains { $0.contains("not a minisign public key") }, "\(messages)")
        // Items at column 0 get a sibling at column 0.
        let edited = try TrustListEditor.adding(.init(name: "c", key: key), to: "trust:\n- name: a\n  key: \(key.base64)\n")
        XCTAssertTrue(edited.hasSuffix("- name: \"c\"\n  key: \"\(key.base64)\"\n  ids: \"*\"\n"), edited)
    }
}
