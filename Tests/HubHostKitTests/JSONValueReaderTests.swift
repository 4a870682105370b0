import Foundation
import XCTest

@testable import HubHostKit

/// The hand reader of JSON columns gives what JSONDecoder gives, or nil so the caller falls back
/// to it: never a different value.
final class JSONValueReaderTests: XCTestCase {
    func decoded(_ text: String) -> JSONValue? { try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) }

    func testValidJSONReadsAsJSONDecoderReadsIt() {
        let samples = [
            "{}", "[]", "null", "true", "false", "0", "-0", "12", "-7", "3.25", "-0.000125", "1e3", "2.5E-4", "123456789012345",
            #""plain""#, #""esc \" \\ \/ \b \f \n \r \t""#, #""\u00e9\u4e2d\ud83d\ude00""#, #""é 中 😀""#,
            #" { "a" : [ 1 , 2.5 , "x" , null , true , { "b" : [] } ] , "c" : { } } "#,
            #"{"dup": 1, "dup": 2}"#, #"[[[[[[[[[[["deep"]]]]]]]]]]]"#
        ]
        for text in samples {
            XCTAssertEqual(JSONValueReader.read(text), decoded(text), text)
            XCTAssertNotNil(JSONValueReader.read(text), "taken by the fast path: \(text)")
        }
    }

    func testWhatItDoesNotTakeIsNilNeverAnotherValue() {
        let refused = [
            "", " ", "{", "[1,]", "{\"a\":}", "01", "1.", ".5", "-", "1e", "1e1000", "tru", "nul", "\"open", "\"\u{01}\"",
            #""\x""#, #""\ud83d""#, #""\ud83dx""#, "[1] 2", "1234567890123456", "0.1234567890123456",
            String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        ]
        for text in refused {
            XCTAssertNil(JSONValueReader.read(text), text)
        }
        // The ones JSONDecoder takes (more digits than a Double holds exactly) it leaves to it.
        XCTAssertNotNil(decoded("1234567890123456"))
    }

    func testMutatedJSONIsReadAsJSONDecoderReadsItOrLeftToIt() {
        var generator = FuzzRandom(seed: 7)
        let base = Array(#"{"a":[1,-2.5,"x\n\u00e9",null,true,{"b":[]}],"c":{"d":"e"}}"#.utf8)
        for _ in 0..<3_000 {
            var bytes = base
            for _ in 0..<(1 + Int(generator.next() % 3)) {
                let at = Int(generator.next() % UInt64(bytes.count))
                let choices = Array(#"{}[]",:\u0-9e.tn "#.utf8)
                bytes[at] = choices[Int(generator.next() % UInt64(choices.count))]
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if let read = JSONValueReader.read(text) { XCTAssertEqual(read, decoded(text), text) }
        }
    }

    func testPrefetchFilesDecodeAsJSONDecoderDecodesThem() throws {
        let files = [
            PrefetchFile(
                role: "main", index: 0, url: "https://example.com/a/b.mp4?x=1&y=\"2\"", size: 5_000_000_000,
                sha256: String(repeating: "ab", count: 32),
                autoDownload: true, localPath: "/data/items/é/main.mp4", bytesDownloaded: 1234, done: false, validator: "\"etag\"",
                duration: 12.5, partialLength: 4096, partialSeconds: 3.5),
            PrefetchFile(
                role: "thumbnail", index: 1, url: "u", size: nil, sha256: nil, autoDownload: false, localPath: "/p", bytesDownloaded: 0,
                done: true, validator: nil, duration: nil, partialLength: nil)
        ]
        let text = String(decoding: try PrefetchStore.encoder.encode(files), as: UTF8.self)
        XCTAssertNotNil(JSONValueReader.read(text), "the stored form takes the fast path: \(text)")
        XCTAssertEqual(try PrefetchFile.decodeList(text), files)
        // Keys in another order, whitespace, escapes and a key JSONDecoder ignores read the same.
        let reordered =
            #" [ { "done" : true , "localPath" : "\/p" , "extra" : {"x": [1]}, "bytesDownloaded" : 0 , "autoDownload" : false , "url" : "u" , "index" : 1 , "role" : "th\u0075mbnail", "size": null } ] "#
        XCTAssertEqual(try PrefetchFile.decodeList(reordered), [files[1]])
        XCTAssertEqual(try PrefetchFile.decodeList(reordered), try JSONDecoder().decode([PrefetchFile].self, from: Data(reordered.utf8)))
        // A missing key fails as JSONDecoder fails.
        XCTAssertThrowsError(try PrefetchFile.decodeList(#"[{"role":"main"}]"#))
        // A shape the fast path does not take (a fractional index) fails as JSONDecoder fails.
        let fractional = text.replacingOccurrences(of: #""index":1"#, with: #""index":1.5"#)
        XCTAssertThrowsError(try PrefetchFile.decodeList(fractional))
        XCTAssertThrowsError(try JSONDecoder().decode([PrefetchFile].self, from: Data(fractional.utf8)))
    }
}
