import Foundation
import HubHostTools

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A fake Engage XMLAPI service and OAuth token endpoint on 127.0.0.1 (LoopbackHTTPServer). It
/// decodes the `xml=` form field, parses the request with a real XML parser (FoundationXML's
/// XMLParser, a tree of its own: not the code under test), and keeps a recipient table and an
/// audit (relational) table. AddRecipient, SelectRecipientData (by RECIPIENT_ID, EMAIL or ALL the
/// COLUMNs; errorid 128 when none matches), UpdateRecipient and InsertUpdateRelationalTable
/// (upsert by the row's first column). Faults on demand: an answer scripted for the next requests
/// (a fault in a 200, an HTTP status, a hang, an answer lost after the request was carried out, a
/// slow answer), and a 401 for an access token it expired.
final class TestXMLAPIService: @unchecked Sendable {
    enum Behavior: Equatable {
        /// Answer this one normally (to script a later request).
        case pass
        case fault(errorID: Int, text: String)
        case status(Int)
        case hang
        /// Carry the request out, then close the connection without an answer (a lost answer).
        case performThenDrop
        /// Wait this many seconds, then answer normally (requests queue behind it: one thread).
        case slow(Double)
    }

    struct Recipient: Equatable {
        var id: String
        var columns: [String: String]
    }

    /// A parsed request element.
    struct Node {
        var name: String
        var attributes: [String: String]
        var text: String
        var children: [Node]
        func child(_ name: String) -> Node? { children.first { $0.name == name } }
    }

    private let lock = NSLock()
    private let server: LoopbackHTTPServer
    private var script: [Behavior] = []
    private var nextRecipient = 1000
    private(set) var recipientsByID: [String: Recipient] = [:]
    /// Audit table rows by their first column's value.
    private var auditRows: [String: [String: String]] = [:]
    private var validToken: String?
    private var tokenSerial = 0
    private var operationLog: [String] = []
    private var rawBodies: [String] = []
    private var parsedRequests: [Node] = []

    init() throws {
        server = try LoopbackHTTPServer()
        server.start(answeringWith: self) { service, fd, request in service.handle(fd, request) }
    }

    var host: String { "http://127.0.0.1:\(server.port)" }
    var tokenURL: String { "http://127.0.0.1:\(server.port)/oauth/token" }

    /// The next requests to /XMLAPI get these answers in order, before the normal ones.
    func script(_ behaviors: [Behavior]) { lock.withLock { script = behaviors } }

    /// Makes the current access token invalid: the next XMLAPI request gets 401 until a new one is fetched.
    func expireToken() { lock.withLock { validToken = "expired-\(UUID().uuidString)" } }

    var recipients: [Recipient] { lock.withLock { recipientsByID.values.sorted { $0.id < $1.id } } }
    func recipient(_ id: String) -> Recipient? { lock.withLock { recipientsByID[id] } }
    var audit: [[String: String]] { lock.withLock { auditRows.keys.sorted().map { auditRows[$0]! } } }
    var operations: [String] { lock.withLock { operationLog } }
    var bodies: [String] { lock.withLock { rawBodies } }
    var requests: [Node] { lock.withLock { parsedRequests } }
    var tokensIssued: Int { lock.withLock { tokenSerial } }

    /// Puts a recipient in the table directly (one that "already exists" in Engage).
    @discardableResult
    func addRecipient(_ columns: [String: String]) -> String {
        lock.withLock {
            nextRecipient += 1
            let id = String(nextRecipient)
            recipientsByID[id] = Recipient(id: id, columns: columns)
            return id
        }
    }

    func stop() { server.stop() }
    deinit { stop() }

    private func handle(_ fd: Int32, _ request: LoopbackHTTPServer.Request) {
        if request.path == "/oauth/token" {
            let token: String = lock.withLock {
                tokenSerial += 1
                validToken = "token-\(tokenSerial)"
                return validToken!
            }
            LoopbackHTTPServer.respond(
                fd, 200, headers: ["Content-Type": "application/json"],
                Data(#"{"access_token":"\#(token)","expires_in":3600}"#.utf8))
            return
        }
        guard request.path == "/XMLAPI", request.method == "POST" else {
            LoopbackHTTPServer.respond(fd, 404, Data())
            return
        }
        let scripted: Behavior? = lock.withLock { script.isEmpty ? nil : script.removeFirst() }
        switch scripted {
        case .hang?:
            server.keepOpen(fd)
            return
        case .status(let code)?:
            LoopbackHTTPServer.respond(fd, code, Data("scripted".utf8))
            return
        default: break
        }
        let authorized = lock.withLock { validToken == nil || request.headers["authorization"] == "Bearer \(validToken!)" }
        guard authorized else {
            LoopbackHTTPServer.respond(fd, 401, Data("token expired".utf8))
            return
        }
        let answer: String
        do {
            let body = String(decoding: request.body, as: UTF8.self)
            guard body.hasPrefix("xml=") else { throw Problem(text: "no xml= form field") }
            let xml = String(body.dropFirst(4)).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            let envelope = try Self.parse(xml)
            guard envelope.name == "Envelope", let op = envelope.child("Body")?.children.first else {
                throw Problem(text: "not an Envelope/Body/operation")
            }
            lock.withLock {
                rawBodies.append(xml)
                parsedRequests.append(op)
                operationLog.append(op.name)
            }
            if case .fault(let id, let text)? = scripted {
                answer = Self.fault(id, text)
            } else if case .performThenDrop? = scripted {
                _ = lock.withLock { perform(op) }
                close(fd)
                return
            } else {
                if case .slow(let seconds)? = scripted { Thread.sleep(forTimeInterval: seconds) }
                answer = lock.withLock { perform(op) }
            }
        } catch {
            answer = Self.fault(1, "malformed request: \(error)")
        }
        LoopbackHTTPServer.respond(fd, 200, headers: ["Content-Type": "text/xml"], Data(answer.utf8))
    }

    struct Problem: Error { var text: String }

    /// Caller holds the lock.
    private func perform(_ op: Node) -> String {
        func columns(_ node: Node) -> [(String, String)] {
            node.children.filter { $0.name == "COLUMN" }.map { ($0.child("NAME")?.text ?? "", $0.child("VALUE")?.text ?? "") }
        }
        switch op.name {
        case "AddRecipient":
            guard op.child("LIST_ID") != nil, op.child("CREATED_FROM") != nil else { return Self.fault(2, "LIST_ID and CREATED_FROM are required") }
            nextRecipient += 1
            let id = String(nextRecipient)
            recipientsByID[id] = Recipient(id: id, columns: Dictionary(columns(op), uniquingKeysWith: { _, last in last }))
            return Self.success("<RecipientId>\(id)</RecipientId>")
        case "SelectRecipientData":
            let wanted = columns(op)
            let match = recipientsByID.values.sorted { $0.id < $1.id }.first { recipient in
                if let id = op.child("RECIPIENT_ID")?.text { return recipient.id == id }
                if let email = op.child("EMAIL")?.text, recipient.columns["EMAIL"] != email { return false }
                return !wanted.isEmpty || op.child("EMAIL") != nil ? wanted.allSatisfy { recipient.columns[$0.0] == $0.1 } : false
            }
            guard let match else { return Self.fault(128, "Recipient is not a member of this list.") }
            let cols = match.columns.sorted { $0.key < $1.key }.map {
                "<COLUMN><NAME>\(Self.escape($0.key))</NAME><VALUE>\(Self.escape($0.value))</VALUE></COLUMN>"
            }.joined()
            return Self.success("<RecipientId>\(match.id)</RecipientId><COLUMNS>\(cols)</COLUMNS>")
        case "UpdateRecipient":
            guard let id = op.child("RECIPIENT_ID")?.text, var recipient = recipientsByID[id] else {
                return Self.fault(128, "Recipient is not a member of this list.")
            }
            for (name, value) in columns(op) { recipient.columns[name] = value }
            recipientsByID[id] = recipient
            return Self.success("<RecipientId>\(id)</RecipientId>")
        case "InsertUpdateRelationalTable":
            guard op.child("TABLE_ID") != nil, let rows = op.child("ROWS") else { return Self.fault(3, "TABLE_ID and ROWS are required") }
            for row in rows.children where row.name == "ROW" {
                let cells = row.children.filter { $0.name == "COLUMN" }.map { ($0.attributes["name"] ?? "", $0.text) }
                guard let key = cells.first?.1 else { continue }
                auditRows[key] = Dictionary(cells, uniquingKeysWith: { _, last in last })
            }
            return Self.success("")
        default:
            return Self.fault(4, "unknown operation \(op.name)")
        }
    }

    static func success(_ inner: String) -> String {
        "<Envelope><Body><RESULT><SUCCESS>TRUE</SUCCESS>\(inner)</RESULT></Body></Envelope>"
    }

    static func fault(_ id: Int, _ text: String) -> String {
        "<Envelope><Body><RESULT><SUCCESS>false</SUCCESS></RESULT><Fault><Request/><FaultCode/><FaultString><![CDATA[\(text)]]></FaultString><detail><error><errorid>\(id)</errorid><module/><class>SP.API</class><method/></error></detail></Fault></Body></Envelope>"
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }

    /// Parses a request with XMLParser into Nodes.
    static func parse(_ xml: String) throws -> Node {
        final class Builder: NSObject, XMLParserDelegate {
            var stack: [Node] = []
            var root: Node?
            func parser(
                _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]
            ) {
                stack.append(Node(name: name, attributes: attributes, text: "", children: []))
            }
            func parser(_ parser: XMLParser, foundCharacters string: String) {
                if !stack.isEmpty { stack[stack.count - 1].text += string }
            }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
                guard let done = stack.popLast() else { return }
                if stack.isEmpty { root = done } else { stack[stack.count - 1].children.append(done) }
            }
        }
        let parser = XMLParser(data: Data(xml.utf8))
        let builder = Builder()
        parser.delegate = builder
        guard parser.parse(), let root = builder.root else { throw Problem(text: "not XML: \(parser.parserError.map { "\($0)" } ?? "?")") }
        return root
    }
}
