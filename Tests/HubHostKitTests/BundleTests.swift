import Foundation
import XCTest

@testable import HubHostKit

/// Key pairs made with the openssl command, as the README tells authors to.
enum TestKeys {
    /// Writes `<name>.pem` (private) and `<name>.der` (DER SubjectPublicKeyInfo) into `folder`.
    /// `algorithm`: "RSA", "EC" or "ED25519".
    static func make(_ algorithm: String, name: String, in folder: String) throws -> (privateKey: String, publicKey: String) {
        let privateKey = "\(folder)/\(name).pem"
        let publicKey = "\(folder)/\(name).der"
        var arguments = ["genpkey", "-algorithm", algorithm, "-out", privateKey]
        switch algorithm {
        case "RSA": arguments += ["-pkeyopt", "rsa_keygen_bits:2048"]
        case "EC": arguments += ["-pkeyopt", "ec_paramgen_curve:P-256"]
        default: break
        }
        let generated = try TestSupport.run("/usr/bin/openssl", arguments)
        XCTAssertEqual(generated.status, 0, generated.stderr)
        let exported = try TestSupport.run("/usr/bin/openssl", ["pkey", "-in", privateKey, "-pubout", "-outform", "DER", "-out", publicKey])
        XCTAssertEqual(exported.status, 0, exported.stderr)
        return (privateKey, publicKey)
    }
}

/// Building, signing, verifying and installing content bundles: real folders, real SQLite files,
/// keys from the openssl command.
final class BundleTests: XCTestCase {
    static let fixture = TestSupport.repository + "/Tests/Fixtures/content"

    // MARK: Building

    func testBuildsTheSampleFolderWithHierarchyOrderTagsResourcesAndNotifications() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let summary = try BundleBuilder.build(from: Self.fixture, to: folder + "/b.sqlite3", now: Date(timeIntervalSince1970: 1_800_000_000))
        XCTAssertEqual([summary.hubs, summary.channels, summary.articles, summary.resources, summary.notifications], [2, 3, 6, 2, 1])
        XCTAssertEqual(summary.version, "2026.11.22-1", "bundle.yaml's version")
        let bundle = try ContentBundle(path: folder + "/b.sqlite3")
        XCTAssertEqual(bundle.metadata.contentSource, "hubhost-sample")
        XCTAssertEqual(bundle.metadata.created, "2027-01-15T08:00:00Z")
        XCTAssertEqual(bundle.hubs.map(\.id), ["news", "cooking"], "front-matter order, not the name")
        XCTAssertEqual(bundle.hubs.map(\.title), ["News", "Cooking"])
        XCTAssertEqual(bundle.hubs[0].tags, ["news", "local"], "from _index.md")
        XCTAssertEqual(bundle.hubs[0].channels.map(\.id), ["news/sports", "news/local"])
        XCTAssertEqual(bundle.hubs[0].channels[1].tags, ["local"], "from _index.yaml")
        XCTAssertEqual(bundle.hubs[0].channels[0].articles.map(\.id), ["news/sports/final-score", "news/sports/transfer-news"])
        // Without `order`, after the ordered ones, then by name.
        XCTAssertEqual(bundle.hubs[0].channels[1].articles.map(\.id), ["news/local/market-day", "news/local/road-works"])
        let final = try XCTUnwrap(bundle.article("news/sports/final-score"))
        XCTAssertEqual(final.title, "The final score")
        XCTAssertEqual(final.tags, ["sports", "football"])
        XCTAssertEqual(final.sourceURL, "https://example.com/news/final-score")
        XCTAssertEqual(bundle.article("news/local/road-works")?.title, "Road works on Main Street", "the first # heading when there is no title")
        let body = try XCTUnwrap(bundle.body(ofArticle: "news/sports/final-score"))
        XCTAssertTrue(body.contains("<strong>3 to 1</strong>"), body)
        XCTAssertTrue(body.contains("<img src=\"resources/images/pixel.png\" alt=\"The stadium\""), body)
        XCTAssertTrue(body.contains("<li>Second goal from a <code>penalty</code></li>"), body)
        let html = try XCTUnwrap(bundle.body(ofArticle: "news/local/market-day"))
        XCTAssertTrue(html.hasPrefix("<link rel=\"stylesheet\" href=\"resources/site.css\">"), "HTML articles are taken as they are: \(html)")
        XCTAssertFalse(html.contains("---"), "the front matter is not part of the body")
        XCTAssertEqual(bundle.resourcePaths(), ["resources/images/pixel.png", "resources/site.css"])
        XCTAssertEqual(bundle.resource("resources/site.css")?.mimeType, "text/css")
        let png = try XCTUnwrap(bundle.resource("resources/images/pixel.png"))
        XCTAssertEqual(png.mimeType, "image/png")
        XCTAssertEqual(png.data, FileManager.default.contents(atPath: Self.fixture + "/resources/images/pixel.png"))
        XCTAssertEqual(
            bundle.notifications,
            [
                .init(
                    id: "market-reminder", fireAtMs: 1_796_457_600_000, message: "The farmers' market opens today",
                    actionURI: "zbimdb://article/news/local/market-day")
            ])
    }

    func testVersionOptionOverridesBundleYAMLAndDefaultsToTheBuildTime() throws {
        let folder = try TestSupport.temporaryFolder(self)
        XCTAssertEqual(try BundleBuilder.build(from: Self.fixture, to: folder + "/a.sqlite3", version: "9.9").version, "9.9")
        try TestSupport.write("---\ntitle: A\n---\nText\n", to: folder + "/plain/h/c/a.md")
        let summary = try BundleBuilder.build(from: folder + "/plain", to: folder + "/b.sqlite3", now: Date(timeIntervalSince1970: 0))
        XCTAssertEqual(summary.version, "1970-01-01T00:00:00Z")
        XCTAssertEqual(summary.contentSource, "plain", "the folder name without bundle.yaml")
        XCTAssertEqual(try ContentBundle(path: folder + "/b.sqlite3").hubs.first?.title, "h", "a hub's title defaults to its folder name")
    }

    func testStrayFilesEmptyFoldersAndBadFrontMatterAreReportedWithTheirPaths() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let root = folder + "/content"
        try TestSupport.write("---\ntitle: Good\n---\nText\n", to: root + "/hub/channel/good.md")
        try TestSupport.write("stray", to: root + "/README.txt")
        try TestSupport.write("stray", to: root + "/hub/notes.md")
        try TestSupport.write("not an article", to: root + "/hub/channel/photo.jpg")
        try FileManager.default.createDirectory(atPath: root + "/hub/empty-channel", withIntermediateDirectories: true)
        try TestSupport.write("---\ntitle: Bad\ntags: [a, b\n---\nText\n", to: root + "/hub/channel/bad-yaml.md")
        try TestSupport.write("---\ntitle: X\nauthor: me\norder: first\n---\nText\n", to: root + "/hub/channel/bad-keys.md")
        try TestSupport.write("---\ntitle: Unclosed\nText\n", to: root + "/hub/channel/unclosed.md")
        try TestSupport.write("Text", to: root + "/hub/channel/deep/too-deep.md")
        try TestSupport.write("- id: n\n  at: tomorrow\n  message: m\n  action_uri: zbimdb://hub/hub\n", to: root + "/notifications.yaml")
        XCTAssertThrowsError(try BundleBuilder.build(from: root, to: folder + "/out.sqlite3")) { error in
            let problems = (error as? BundleBuilder.BuildError)?.problems ?? []
            func problem(_ suffix: String) -> BundleBuilder.Problem? { problems.first { $0.path.hasSuffix(suffix) } }
            XCTAssertTrue(problem("/README.txt")?.message.contains("a file at the hub level") == true, "\(problems)")
            XCTAssertTrue(problem("/hub/notes.md")?.message.contains("a file at the channel level") == true, "\(problems)")
            XCTAssertTrue(problem("/photo.jpg")?.message.contains("not an article") == true, "\(problems)")
            XCTAssertTrue(problem("/empty-channel")?.message.contains("no articles") == true, "\(problems)")
            XCTAssertTrue(problem("/deep")?.message.contains("a folder inside a channel") == true, "\(problems)")
            let yaml = try? XCTUnwrap(problem("/bad-yaml.md"))
            XCTAssertTrue(yaml?.message.contains("invalid YAML") == true, "\(problems)")
            XCTAssertNotNil(yaml?.line, "a YAML error carries its line")
            XCTAssertGreaterThanOrEqual(yaml?.line ?? 0, 2, "lines count from the file's first line, the opening ---")
            let keys = problems.filter { $0.path.hasSuffix("/bad-keys.md") }
            XCTAssertEqual(keys.map(\.line), [3, 4], "\(keys)")
            XCTAssertTrue(keys[0].message.contains("unknown front-matter key 'author'"), "\(keys)")
            XCTAssertTrue(keys[1].message.contains("'order' must be a whole number"), "\(keys)")
            XCTAssertEqual(problem("/unclosed.md")?.line, 1)
            XCTAssertEqual(problem("/notifications.yaml")?.line, 1)
            XCTAssertTrue(problem("/notifications.yaml")?.message.contains("ISO 8601") == true, "\(problems)")
            XCTAssertTrue("\(error)".contains("/README.txt: a file at the hub level"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/out.sqlite3"), "nothing is written when there are problems")
        XCTAssertThrowsError(try BundleBuilder.build(from: folder + "/missing", to: folder + "/out.sqlite3")) { error in
            XCTAssertTrue("\(error)".contains("no such folder"), "\(error)")
        }
    }

    // MARK: Signatures

    func testSignsAndVerifiesWithRSAECAndEd25519AndRejectsTheOtherKeys() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let data = Data("bundle bytes".utf8)
        var keys: [(String, String)] = []
        for algorithm in ["RSA", "EC", "ED25519"] {
            let pair = try TestKeys.make(algorithm, name: algorithm, in: folder)
            keys.append(pair)
            let signature = try BundleSignature.sign(data, privateKeyAt: pair.privateKey)
            XCTAssertTrue(try BundleSignature.verify(data, signature: signature, publicKeyAt: pair.publicKey), algorithm)
            var changed = data
            changed[0] ^= 1
            XCTAssertFalse(try BundleSignature.verify(changed, signature: signature, publicKeyAt: pair.publicKey), algorithm)
        }
        for (i, signer) in keys.enumerated() {
            let signature = try BundleSignature.sign(data, privateKeyAt: signer.0)
            for (j, verifier) in keys.enumerated() where i != j {
                XCTAssertFalse(try BundleSignature.verify(data, signature: signature, publicKeyAt: verifier.1), "\(i) signed, \(j) verified")
            }
        }
        XCTAssertThrowsError(try BundleSignature.sign(data, privateKeyAt: keys[0].1)) { error in
            XCTAssertTrue("\(error)".contains("is not a PEM private key"), "\(error)")
        }
        XCTAssertThrowsError(try BundleSignature.verify(data, signature: Data([1]), publicKeyAt: keys[0].0)) { error in
            XCTAssertTrue("\(error)".contains("is not a DER SubjectPublicKeyInfo public key"), "\(error)")
        }
        let encrypted = folder + "/encrypted.pem"
        let result = try TestSupport.run("/usr/bin/openssl", ["pkey", "-in", keys[0].0, "-aes256", "-passout", "pass:secret", "-out", encrypted])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertThrowsError(try BundleSignature.sign(data, privateKeyAt: encrypted)) { error in
            XCTAssertTrue("\(error)".contains("encrypted private key"), "\(error)")
        }
    }

    // MARK: Verification and install

    /// A signed bundle of the sample folder with its metadata, and the key pair.
    private func signedSample(in folder: String, algorithm: String = "RSA", version: String? = nil, name: String = "sample", now: Date = Date())
        throws -> (bundle: String, metadata: BundleMetadata, publicKey: String, privateKey: String)
    {
        let keys =
            FileManager.default.fileExists(atPath: "\(folder)/\(algorithm).pem")
            ? ("\(folder)/\(algorithm).pem", "\(folder)/\(algorithm).der") : try TestKeys.make(algorithm, name: algorithm, in: folder)
        let path = "\(folder)/\(name).sqlite3"
        let (_, metadata) = try BundleBuilder.buildSigned(from: Self.fixture, to: path, privateKeyPath: keys.0, version: version, now: now)
        XCTAssertEqual(try BundleMetadata.read(path: path + ".json"), metadata, "FILE.json beside FILE")
        return (path, metadata, keys.1, keys.0)
    }

    private func rejection(_ body: () throws -> Any) -> BundleRejection? {
        do {
            _ = try body()
            XCTFail("expected a rejection")
            return nil
        } catch {
            guard let rejection = error as? BundleRejection else {
                XCTFail("not a BundleRejection: \(error)")
                return nil
            }
            return rejection
        }
    }

    func testVerifiesAGoodBundleAndRejectsTamperedTruncatedUnsignedWrongKeyAndNotABundle() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let sample = try signedSample(in: folder, algorithm: "EC")
        let data = try Data(contentsOf: URL(fileURLWithPath: sample.bundle))
        XCTAssertEqual(sample.metadata.size, Int64(data.count))
        XCTAssertEqual(sample.metadata.sha256, SHA256.hex(ofFile: sample.bundle))
        XCTAssertEqual(sample.metadata.format, 1)
        XCTAssertNoThrow(try BundleVerifier.verify(data, metadata: sample.metadata, publicKeyPath: sample.publicKey))
        XCTAssertEqual(try BundleVerifier.verifyFile(sample.bundle, metadata: sample.metadata, publicKeyPath: sample.publicKey).hubs.count, 2)

        var flipped = data
        flipped[flipped.count / 2] ^= 0x01
        XCTAssertEqual(rejection { try BundleVerifier.verify(flipped, metadata: sample.metadata, publicKeyPath: sample.publicKey) }?.kind, .tampered)
        let truncated = rejection {
            try BundleVerifier.verify(data.prefix(data.count - 100), metadata: sample.metadata, publicKeyPath: sample.publicKey)
        }
        XCTAssertEqual(truncated?.kind, .truncated)
        XCTAssertTrue(truncated?.reason.contains("\(data.count - 100) bytes") == true, "\(String(describing: truncated))")
        var unsigned = sample.metadata
        unsigned.signature = ""
        XCTAssertEqual(rejection { try BundleVerifier.verify(data, metadata: unsigned, publicKeyPath: sample.publicKey) }?.kind, .unsigned)
        let other = try TestKeys.make("RSA", name: "other", in: folder)
        let wrongKey = rejection { try BundleVerifier.verify(data, metadata: sample.metadata, publicKeyPath: other.publicKey) }
        XCTAssertEqual(wrongKey?.kind, .badSignature)
        XCTAssertTrue(wrongKey?.reason.contains("signed with another key") == true)
        XCTAssertEqual(rejection { try BundleVerifier.verify(data, metadata: sample.metadata, publicKeyPath: nil) }?.kind, .noPublicKey)
        XCTAssertEqual(
            rejection { try BundleVerifier.verify(data, metadata: sample.metadata, publicKeyPath: folder + "/none.der") }?.kind, .badPublicKey)
        // Digest and size replaced to match changed bytes: only the signature catches it.
        var forged = sample.metadata
        forged.sha256 = SHA256.hex(of: flipped)
        XCTAssertEqual(rejection { try BundleVerifier.verify(flipped, metadata: forged, publicKeyPath: sample.publicKey) }?.kind, .badSignature)

        var future = sample.metadata
        future.format = 2
        let unsupported = rejection { try BundleVerifier.verify(data, metadata: future, publicKeyPath: sample.publicKey) }
        XCTAssertEqual(unsupported?.kind, .notABundle)
        XCTAssertTrue(unsupported?.reason.contains("format is 2") == true)

        // Properly signed bytes that are not a bundle.
        let text = folder + "/not-a-bundle.sqlite3"
        try TestSupport.write("just text, signed", to: text)
        let textData = try Data(contentsOf: URL(fileURLWithPath: text))
        let textMetadata = BundleMetadata.describing(
            textData, version: "1", created: "now",
            signature: try BundleSignature.sign(textData, privateKeyAt: sample.privateKey))
        XCTAssertEqual(rejection { try BundleVerifier.verifyFile(text, metadata: textMetadata, publicKeyPath: sample.publicKey) }?.kind, .notABundle)
    }

    func testMetadataDocumentShapeAndErrors() throws {
        let decoded = try BundleMetadata.decode(Data(#"{"version": 7, "size": 10, "sha256": "ABC", "created": "x"}"#.utf8))
        XCTAssertEqual(decoded, BundleMetadata(version: "7", size: 10, sha256: "abc", signature: "", created: "x", format: 1))
        let encoded = try XCTUnwrap(try JSONSerialization.jsonObject(with: decoded.encoded()) as? [String: Any])
        XCTAssertEqual(Set(encoded.keys), ["version", "size", "sha256", "signature", "created", "format"])
        XCTAssertThrowsError(try BundleMetadata.decode(Data(#"{"version": "1", "sha256": "a"}"#.utf8), source: "meta.json")) { error in
            XCTAssertEqual("\(error)".contains("meta.json") && "\(error)".contains("'size' is missing"), true, "\(error)")
        }
        XCTAssertThrowsError(try BundleMetadata.decode(Data("<html>".utf8))) { error in
            XCTAssertTrue("\(error)".contains("not valid JSON"), "\(error)")
        }
    }

    private func engine(dataDirectory: String, publicKey: String?, preloaded: String? = nil, capture: LogCapture? = nil) throws -> HubEngine {
        var settings = HubSettings()
        settings.publicKeyPath = publicKey
        settings.preloadedBundle = preloaded
        let pipeline = LogPipeline(filter: LogFilter(severity: .info, verbosity: .info))
        if let capture { pipeline.attach([capture]) }
        return try HubEngine(settings: settings, dataDirectory: dataDirectory, notifications: HostNotifications(), pipeline: pipeline)
    }

    func testInstallKeepsThePreviousGoodBundleActiveAfterRejectionsAndSurvivesARestart() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let data = folder + "/data"
        let first = try signedSample(in: folder, version: "1", name: "first")
        let capture = LogCapture()
        let hub = try engine(dataDirectory: data, publicKey: first.publicKey, capture: capture)
        XCTAssertNil(hub.activeBundle)
        XCTAssertFalse(hub.state.isReady)
        // Not kept in a variable: a bundle the test holds open is in use, and pruning keeps it.
        XCTAssertEqual(try hub.install(metadata: first.metadata, bundleAt: first.bundle).metadata.version, "1")
        XCTAssertEqual(hub.activeBundle?.metadata.version, "1")
        XCTAssertTrue(hub.state.isReady)
        let stored = data + "/hub/bundles/\(first.metadata.sha256).sqlite3"
        XCTAssertEqual(hub.activeBundle?.path, stored)
        XCTAssertEqual(hub.bundleStore.activePointer()?.sha256, first.metadata.sha256)

        // Every kind of bad bundle is rejected and changes nothing.
        let second = try signedSample(in: folder, version: "2", name: "second")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: second.bundle))
        bytes[100] ^= 0xFF
        var unsigned = second.metadata
        unsigned.signature = "  "
        let other = try TestKeys.make("EC", name: "other", in: folder)
        let wrongKeyBundle = folder + "/wrong-key.sqlite3"
        let (_, wrongKeyMetadata) = try BundleBuilder.buildSigned(
            from: Self.fixture, to: wrongKeyBundle, privateKeyPath: other.privateKey, version: "3")
        let attempts: [(BundleRejection.Kind, () throws -> ContentBundle)] = [
            (.tampered, { try hub.install(metadata: second.metadata, bundleData: bytes) }),
            (.truncated, { try hub.install(metadata: second.metadata, bundleData: bytes.prefix(4096)) }),
            (.unsigned, { try hub.install(metadata: unsigned, bundleAt: second.bundle) }),
            (.badSignature, { try hub.install(metadata: wrongKeyMetadata, bundleAt: wrongKeyBundle) }),
            (.unreadable, { try hub.install(metadata: second.metadata, bundleAt: folder + "/missing.sqlite3") })
        ]
        for (kind, attempt) in attempts {
            XCTAssertEqual(rejection(attempt)?.kind, kind)
            XCTAssertEqual(hub.activeBundle?.metadata.version, "1", "after a \(kind) rejection")
            XCTAssertEqual(hub.bundleStore.activePointer()?.sha256, first.metadata.sha256)
        }
        XCTAssertTrue(
            capture.records.contains { $0.message.contains("bundle rejected (tampered)") && $0.message.contains("active bundle is unchanged") },
            "rejections are logged")
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: data + "/hub/bundles"))
        XCTAssertEqual(
            files, ["\(first.metadata.sha256).json", "\(first.metadata.sha256).sqlite3", "active.json"], "nothing of the rejected bundles is left")

        // A good second bundle replaces the first; a third prunes the first.
        try hub.install(metadata: second.metadata, bundleAt: second.bundle)
        XCTAssertEqual(hub.activeBundle?.metadata.version, "2")
        XCTAssertEqual(hub.bundleStore.activePointer()?.previous, first.metadata.sha256)
        let third = try signedSample(in: folder, version: "3", name: "third")
        try hub.install(metadata: third.metadata, bundleData: try Data(contentsOf: URL(fileURLWithPath: third.bundle)))
        let kept = try FileManager.default.contentsOfDirectory(atPath: data + "/hub/bundles").filter { $0.hasSuffix(".sqlite3") }.sorted()
        XCTAssertEqual(kept, [second.metadata.sha256, third.metadata.sha256].sorted().map { $0 + ".sqlite3" }, "the active one and the one before")

        // A restart (a new engine on the same data directory) activates the stored bundle.
        let restarted = try engine(dataDirectory: data, publicKey: first.publicKey)
        XCTAssertEqual(restarted.activeBundle?.metadata.version, "3")
        XCTAssertTrue(restarted.state.isReady)
        XCTAssertEqual(restarted.activeBundle?.hubs.map(\.id), ["news", "cooking"])
    }

    func testAnOlderSignedBundleNeverReplacesANewerOne() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let keys = try TestKeys.make("RSA", name: "RSA", in: folder)
        func build(_ name: String, createdAt seconds: Double) throws -> (path: String, metadata: BundleMetadata) {
            let path = "\(folder)/\(name).sqlite3"
            let (_, metadata) = try BundleBuilder.buildSigned(
                from: Self.fixture, to: path, privateKeyPath: keys.privateKey, version: name,
                now: Date(timeIntervalSince1970: seconds))
            return (path, metadata)
        }
        let old = try build("old", createdAt: 1_700_000_000)
        let new = try build("new", createdAt: 1_800_000_000)
        var hub = try engine(dataDirectory: folder + "/data", publicKey: keys.publicKey)
        _ = try hub.install(metadata: new.metadata, bundleAt: new.path)
        let refused = rejection { try hub.install(metadata: old.metadata, bundleAt: old.path) }
        XCTAssertEqual(refused?.kind, .older, refused?.reason ?? "")
        XCTAssertTrue(refused?.reason.contains("before the active bundle") ?? false, refused?.reason ?? "")
        XCTAssertEqual(hub.activeBundle?.metadata.version, "new", "the newer bundle stays active")
        XCTAssertEqual(try hub.install(metadata: new.metadata, bundleAt: new.path).metadata.version, "new", "the same bundle again is fine")
        hub = try engine(dataDirectory: folder + "/data", publicKey: keys.publicKey)  // a restart remembers
        XCTAssertEqual(rejection { try hub.install(metadata: old.metadata, bundleAt: old.path) }?.kind, .older)
        let newest = try build("newest", createdAt: 1_900_000_000)
        XCTAssertEqual(try hub.install(metadata: newest.metadata, bundleAt: newest.path).metadata.version, "newest")
    }

    func testNoPublicKeyConfiguredRejectsAndNotABundleIsRejectedAfterItsSignature() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let sample = try signedSample(in: folder)
        let noKey = try engine(dataDirectory: folder + "/a", publicKey: nil)
        XCTAssertEqual(rejection { try noKey.install(metadata: sample.metadata, bundleAt: sample.bundle) }?.kind, .noPublicKey)
        XCTAssertNil(noKey.activeBundle)

        let hub = try engine(dataDirectory: folder + "/b", publicKey: sample.publicKey)
        let notABundle = Data(repeating: 0x41, count: 8192)
        let metadata = BundleMetadata.describing(
            notABundle, version: "x", created: "now",
            signature: try BundleSignature.sign(notABundle, privateKeyAt: sample.privateKey))
        let rejected = rejection { try hub.install(metadata: metadata, bundleData: notABundle) }
        XCTAssertEqual(rejected?.kind, .notABundle)
        XCTAssertNil(hub.activeBundle)
        XCTAssertNil(hub.bundleStore.activePointer())
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder + "/b/hub/bundles"), [], "the temporary file is removed")
    }

    func testPreloadedBundleIsUsedWhenNothingIsInstalledAndVerifiedWhenItHasMetadata() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let sample = try signedSample(in: folder, version: "preloaded")
        // With metadata beside it: verified, so it needs the right key.
        XCTAssertEqual(
            try engine(dataDirectory: folder + "/a", publicKey: sample.publicKey, preloaded: sample.bundle).activeBundle?.metadata.version,
            "preloaded")
        let other = try TestKeys.make("RSA", name: "other", in: folder)
        let capture = LogCapture()
        let wrong = try engine(dataDirectory: folder + "/b", publicKey: other.publicKey, preloaded: sample.bundle, capture: capture)
        XCTAssertNil(wrong.activeBundle, "a preloaded bundle whose metadata does not verify is not used")
        XCTAssertTrue(
            capture.records.contains { $0.message.contains("preloaded bundle") && $0.message.contains("badSignature") }, "\(capture.records)")
        // Without metadata: trusted as shipped with the app.
        let shipped = try TestBundle.write(
            to: folder + "/shipped.sqlite3", version: "shipped", hubs: [.init("h", channels: [.init("c", articles: [.init("a")])])])
        XCTAssertEqual(try engine(dataDirectory: folder + "/c", publicKey: nil, preloaded: shipped).activeBundle?.metadata.version, "shipped")
        // An installed bundle wins over the preloaded one, also after a restart.
        let hub = try engine(dataDirectory: folder + "/c", publicKey: sample.publicKey, preloaded: shipped)
        try hub.install(metadata: sample.metadata, bundleAt: sample.bundle)
        XCTAssertEqual(
            try engine(dataDirectory: folder + "/c", publicKey: sample.publicKey, preloaded: shipped).activeBundle?.metadata.version, "preloaded")
    }

    func testConcurrentInstallsLeaveTheEngineOnTheBundleThePointerNames() throws {
        let folder = try TestSupport.temporaryFolder(self)
        // One creation time for all four: built a second apart, a later-built one installed first
        // would make the earlier ones "older" and rightly rejected, which is not what this tests.
        let created = Date()
        let samples = try (1...4).map { try signedSample(in: folder, version: "v\($0)", name: "s\($0)", now: created) }
        let hub = try engine(dataDirectory: folder + "/data", publicKey: samples[0].publicKey)
        let failures = LogCapture()  // a thread-safe list; install errors are collected here
        DispatchQueue.concurrentPerform(iterations: samples.count) { i in
            do { _ = try hub.install(metadata: samples[i].metadata, bundleAt: samples[i].bundle) } catch {
                failures.write(LogRecord(severity: .error, verbosity: .info, timeMs: 0, source: "test", message: "\(error)"))
            }
        }
        XCTAssertEqual(failures.messages, [])
        let pointer = try XCTUnwrap(hub.bundleStore.activePointer())
        XCTAssertEqual(hub.activeBundle?.path, hub.bundleStore.bundlePath(sha256: pointer.sha256))
        XCTAssertEqual(hub.activeBundle?.metadata.version, pointer.version)
        let kept = try FileManager.default.contentsOfDirectory(atPath: folder + "/data/hub/bundles").filter { $0.hasSuffix(".sqlite3") }
        XCTAssertEqual(kept.count, 2, "\(kept)")
        XCTAssertEqual(try engine(dataDirectory: folder + "/data", publicKey: samples[0].publicKey).activeBundle?.metadata.version, pointer.version)
    }

    func testAStoredBundleChangedOnDiskIsNotActivatedAtStart() throws {
        let folder = try TestSupport.temporaryFolder(self)
        let sample = try signedSample(in: folder)
        let hub = try engine(dataDirectory: folder + "/data", publicKey: sample.publicKey)
        try hub.install(metadata: sample.metadata, bundleAt: sample.bundle)
        let stored = hub.bundleStore.bundlePath(sha256: sample.metadata.sha256)
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: stored))
        try handle.seek(toOffset: 200)
        try handle.write(contentsOf: Data([0x5A]))
        try handle.close()
        let capture = LogCapture()
        let restarted = try engine(dataDirectory: folder + "/data", publicKey: sample.publicKey, capture: capture)
        XCTAssertNil(restarted.activeBundle)
        XCTAssertTrue(capture.records.contains { $0.message.contains("is damaged") }, "\(capture.records)")
    }
}
