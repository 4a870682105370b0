import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// One parsed XMLAPI answer (the Engage SDK's `ResultDictionary`), read with a real XML parser
/// (FoundationXML's XMLParser, no external entities): `<Envelope><Body><RESULT><SUCCESS>TRUE</SUCCESS>
/// <RecipientId>..</RecipientId>...</RESULT><Fault><FaultString>..</FaultString><detail><error>
/// <errorid>128</errorid>...</error></detail></Fault></Body></Envelope>`.
public struct XMLAPIResult: Sendable, Encodable {
    /// An element: its name, its text (whitespace at the ends trimmed) and its children.
    public struct Element: Sendable, Encodable, Equatable {
        /// The element's name as in the answer (case kept; the look-ups ignore case).
        public var name: String
        /// The element's own text (entities decoded, CDATA included, trimmed), not its children's; empty when it has none.
        public var text: String
        /// The child elements, in document order.
        public var children: [Element]
    }

    /// The answer's `<Envelope>` element, the root of the tree.
    public let root: Element

    /// Not an XML document, or no `<Envelope>`: a service failure, not a fault.
    public struct Malformed: Error, CustomStringConvertible {
        public var description: String
    }

    /// The largest answer parsed (a recipient's data is a few kilobytes).
    public static let maxBytes = 4 << 20

    /// Parses an answer body. Throws `Malformed` when it is larger than `maxBytes`, is not XML, nests deeper than 64 elements,
    /// or its root element is not `<Envelope>`.
    public init(data: Data) throws {
        guard data.count <= Self.maxBytes else { throw Malformed(description: "the answer is larger than \(Self.maxBytes) bytes") }
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        let builder = TreeBuilder()
        parser.delegate = builder
        guard parser.parse(), let root = builder.root else {
            let why = parser.parserError.map { "\($0.localizedDescription)" } ?? "no root element"
            throw Malformed(description: "the answer is not XML (line \(parser.lineNumber)): \(why)")
        }
        guard root.name.caseInsensitiveCompare("Envelope") == .orderedSame else {
            throw Malformed(description: "the answer's root element is <\(root.name)>, not <Envelope>")
        }
        self.root = root
    }

    /// `SUCCESS` is TRUE (any case; "true" and "1" too).
    public var isSuccess: Bool {
        guard let success = value(forShortPath: "RESULT.SUCCESS") ?? value(forShortPath: "SUCCESS") else { return false }
        return ["true", "1", "yes"].contains(success.lowercased())
    }

    /// `Fault.FaultString`, when the answer has one.
    public var faultString: String? { value(forShortPath: "Fault.FaultString") }

    /// `Fault.detail.error.errorid` as a number, when it is one.
    public var errorID: Int? { value(forShortPath: "errorid").flatMap { Int($0) } }

    /// The text of the first element (document order) whose names end with `path`'s dot-separated
    /// names, compared without case: "RecipientId" finds Envelope.Body.RESULT.RecipientId.
    public func value(forShortPath path: String) -> String? {
        let names = path.split(separator: ".").map { $0.lowercased() }
        guard !names.isEmpty else { return nil }
        return find(root, trail: [], names: names)
    }

    private func find(_ element: Element, trail: [String], names: [String]) -> String? {
        let here = trail + [element.name.lowercased()]
        if here.count >= names.count, Array(here.suffix(names.count)) == names { return element.text }
        for child in element.children {
            if let found = find(child, trail: here, names: names) { return found }
        }
        return nil
    }

    /// SelectRecipientData's `<COLUMNS><COLUMN><NAME>n</NAME><VALUE>v</VALUE></COLUMN>...`, in order.
    public var columns: [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        func walk(_ element: Element) {
            if element.name.caseInsensitiveCompare("COLUMN") == .orderedSame,
                let name = element.children.first(where: { $0.name.caseInsensitiveCompare("NAME") == .orderedSame })
            {
                let value = element.children.first { $0.name.caseInsensitiveCompare("VALUE") == .orderedSame }?.text ?? ""
                out.append((name: name.text, value: value))
                return
            }
            element.children.forEach(walk)
        }
        walk(root)
        return out
    }

    /// A column's value by name (exact name first, then without case).
    public func column(_ name: String) -> String? {
        let all = columns
        return all.first { $0.name == name }?.value ?? all.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// Every leaf under RESULT as short path -> text, for printing (`hubhost xmlapi call`).
    public var values: [String: String] {
        var out: [String: String] = [:]
        func walk(_ element: Element, _ path: String) {
            if element.children.isEmpty {
                if out[path] == nil { out[path] = element.text }
                return
            }
            for child in element.children where child.name.caseInsensitiveCompare("COLUMNS") != .orderedSame {
                walk(child, path.isEmpty ? child.name : "\(path).\(child.name)")
            }
        }
        if let body = root.children.first(where: { $0.name.caseInsensitiveCompare("Body") == .orderedSame }) {
            for child in body.children { walk(child, child.name) }
        }
        return out
    }

    /// Builds the element tree; bounded in depth (a hostile answer cannot exhaust the stack later).
    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var stack: [Element] = []
        var root: Element?
        static let maxDepth = 64

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            guard stack.count < Self.maxDepth else {
                parser.abortParsing()
                return
            }
            stack.append(Element(name: elementName, text: "", children: []))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            guard var done = stack.popLast() else { return }
            done.text = done.text.trimmingCharacters(in: .whitespacesAndNewlines)
            if stack.isEmpty { root = done } else { stack[stack.count - 1].children.append(done) }
        }
    }
}
