import Foundation
import Logging
import XCTest

@testable import HubHostKit

/// The XMLAPI client against the fake service (TestXMLAPIService on 127.0.0.1): serialisation and
/// escaping, parsing answers, faults versus service failures, the token refresh on 401, retries.
final class XMLAPITests: XCTestCase {
    func testSeedExampleOneSerialisesAsTheSeedShows() throws {
        var resource = try XMLAPIResource(XMLAPIOperation.selectRecipientData)
        try resource.addParams([("LIST_ID", "45654"), ("EMAIL", "someone@adomain.com")])
        resource.addColumns([("Customer Id", "123-45-6789")])
        XCTAssertEqual(
            resource.xml,
            "<Envelope><Body><SelectRecipientData><LIST_ID>45654</LIST_ID><EMAIL>someone@adomain.com</EMAIL>"
                + "<COLUMN><NAME>Customer Id</NAME><VALUE>123-45-6789</VALUE></COLUMN></SelectRecipientData></Body></Envelope>")
        XCTAssertEqual(
            XMLAPIResource.selectRecipientData(email: "someone@adomain.com", list: "45654").xml,
            "<Envelope><Body><SelectRecipientData><LIST_ID>45654</LIST_ID><EMAIL>someone@adomain.com</EMAIL></SelectRecipientData></Body></Envelope>")
        XCTAssertThrowsError(try XMLAPIResource("Bad Op")) { XCTAssertTrue("\($0)".contains("not a valid XMLAPI element name")) }
        XCTAssertThrowsError(try resource.addParams([("A><B", "x")]))
    }

    func testEveryValueIsEscapedColumnValuesToo() throws {
        let hostile = "</VALUE></COLUMN><EMAIL>x@evil</EMAIL><COLUMN><NAME>a&b \"'"
        var resource = try XMLAPIResource("UpdateRecipient", params: [("RECIPIENT_ID", "1</RECIPIENT_ID><LIST_ID>9")])
        resource.addColumns([(hostile, hostile)])
        resource.addRow([(hostile, hostile)])
        let parsed = try TestXMLAPIService.parse(resource.xml)
        let op = try XCTUnwrap(parsed.child("Body")?.child("UpdateRecipient"))
        XCTAssertEqual(op.children.map(\.name), ["RECIPIENT_ID", "COLUMN", "ROWS"], "no element was injected")
        XCTAssertEqual(op.child("RECIPIENT_ID")?.text, "1</RECIPIENT_ID><LIST_ID>9")
        XCTAssertEqual(op.child("COLUMN")?.child("NAME")?.text, hostile)
        XCTAssertEqual(op.child("COLUMN")?.child("VALUE")?.text, hostile)
        let cell = try XCTUnwrap(op.child("ROWS")?.child("ROW")?.child("COLUMN"))
        XCTAssertEqual(cell.attributes["name"], hostile)
        XCTAssertEqual(cell.text, hostile)
        // Characters XML cannot carry are dropped, not sent raw (they would make the request unparseable).
        XCTAssertEqual(XMLAPIResource.escape("a\u{0}b\u{1B}c\r"), "abc&#13;")
    }

    func testAnswersAreParsedSuccessFaultAndMalformed() throws {
        let success = try XMLAPIResult(
            data: Data(
                """
                <Envelope><Body><RESULT><SUCCESS>TRUE</SUCCESS><RecipientId>702003</RecipientId>
                <COLUMNS><COLUMN><NAME>Mobile User Id</NAME><VALUE>m-1</VALUE></COLUMN></COLUMNS></RESULT></Body></Envelope>
                """.utf8))
        XCTAssertTrue(success.isSuccess)
        XCTAssertEqual(success.value(forShortPath: "RecipientId"), "702003")
        XCTAssertEqual(success.value(forShortPath: "result.recipientid"), "702003")
        XCTAssertEqual(success.column("Mobile User Id"), "m-1")
        XCTAssertNil(success.faultString)
        let fault = try XMLAPIResult(data: Data(TestXMLAPIService.fault(128, "Recipient is not a member of this list.").utf8))
        XCTAssertFalse(fault.isSuccess)
        XCTAssertEqual(fault.errorID, 128)
        XCTAssertEqual(fault.faultString, "Recipient is not a member of this list.")
        // A string-matching reader would take a SUCCESS inside a CDATA value for the real one.
        let sneaky = try XMLAPIResult(
            data: Data("<Envelope><Body><RESULT><SUCCESS>false</SUCCESS><X><![CDATA[<SUCCESS>TRUE</SUCCESS>]]></X></RESULT></Body></Envelope>".utf8))
        XCTAssertFalse(sneaky.isSuccess)
        XCTAssertThrowsError(try XMLAPIResult(data: Data("<Envelope><Body>".utf8)))
        XCTAssertThrowsError(try XMLAPIResult(data: Data("<html>error</html>".utf8)))
    }

    private func client(_ service: TestXMLAPIService, retries: Int = 2, timeout: Double = 5) -> XMLAPIClient {
        let credentials = OAuthTokenCache.Credentials(
            tokenURL: service.tokenURL, clientID: "client", clientSecret: "secret+/=",
            refreshToken: "refresh-\(UUID().uuidString)")
        return XMLAPIClient(
            settings: .init(
                host: service.host + "/", credentials: credentials, timeoutSeconds: timeout,
                maxRetries: retries, retryBaseDelay: 0.01), logger: Logger(label: "test"))
    }

    func testAFaultIsTypedAndNotRetried() throws {
        let service = try TestXMLAPIService()
        defer { service.stop() }
        let client = client(service)
        service.script([.fault(errorID: 140, text: "not allowed")])
        XCTAssertThrowsError(try client.post(XMLAPIResource.selectRecipientData(email: "a@b", list: "1"))) { error in
            guard case XMLAPIError.fault(_, let id, let text)? = error as? XMLAPIError else { return XCTFail("\(error)") }
            XCTAssertEqual(id, 140)
            XCTAssertEqual(text, "not allowed")
        }
        XCTAssertEqual(service.operations, ["SelectRecipientData"], "a fault is sent once")
        // send() hands the fault back as an answer (what `hubhost xmlapi call` prints).
        service.script([.fault(errorID: 128, text: "none")])
        let answer = try client.send(XMLAPIResource.selectRecipientData(email: "a@b", list: "1"))
        XCTAssertFalse(answer.isSuccess)
        XCTAssertEqual(answer.errorID, 128)
    }

    func testA401RefreshesTheTokenOnceAndTheTokenIsShared() throws {
        let service = try TestXMLAPIService()
        defer { service.stop() }
        let client = client(service)
        let add = try XMLAPIResource("AddRecipient", params: [("LIST_ID", "1"), ("CREATED_FROM", "1")])
        try client.post(add)
        XCTAssertEqual(service.tokensIssued, 1)
        try client.post(add)
        XCTAssertEqual(service.tokensIssued, 1, "the cached token is reused")
        service.expireToken()
        try client.post(add)
        XCTAssertEqual(service.tokensIssued, 2, "a 401 refreshed the token once")
        XCTAssertEqual(service.operations.count, 3)
        // A token that keeps being refused: one refresh, then the 401 is a service failure.
        service.script([.status(401), .status(401)])
        XCTAssertThrowsError(try client.post(add)) { error in
            guard case XMLAPIError.http(_, 401)? = error as? XMLAPIError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(service.tokensIssued, 3)
    }

    func testServerErrorsAndNetworkFailuresAreRetriedWithBackoff() throws {
        let service = try TestXMLAPIService()
        defer { service.stop() }
        let client = client(service, retries: 2, timeout: 0.5)
        let add = try XMLAPIResource("AddRecipient", params: [("LIST_ID", "1"), ("CREATED_FROM", "1")])
        service.script([.status(500), .status(503)])
        let result = try client.post(add)
        XCTAssertEqual(result.value(forShortPath: "RecipientId"), "1001", "succeeded on the third attempt")
        service.script([.status(500), .status(500), .status(500)])
        XCTAssertThrowsError(try client.post(add)) { error in
            guard case XMLAPIError.http(_, 500)? = error as? XMLAPIError else { return XCTFail("\(error)") }
        }
        service.script([.hang, .hang, .hang])
        let started = Date()
        XCTAssertThrowsError(try client.post(add)) { error in
            guard case XMLAPIError.unreachable? = error as? XMLAPIError else { return XCTFail("\(error)") }
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "three deadlines of 0.5 s, not a hang")
        service.script([.status(404)])
        XCTAssertThrowsError(try client.post(add)) { error in
            guard case XMLAPIError.http(_, 404)? = error as? XMLAPIError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(service.recipients.count, 1, "only the one request that was answered normally added a recipient")
    }
}
