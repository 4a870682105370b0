import Foundation

/// One Engage XMLAPI request (the Engage SDK's `XMLAPI` resource): an operation name, parameters in the
/// order they were added, COLUMN name/value pairs, and relational-table rows, serialised as
/// `<Envelope><Body><Operation>...</Operation></Body></Envelope>`. Every name and value is
/// XML-escaped, COLUMN values too (the reference SDK writes those raw, so a value such as
/// `</VALUE><EMAIL>x` became markup); element names that are not XML names are refused.
public struct XMLAPIResource: Equatable, Sendable, Codable {
    /// The operation's name, the element inside `<Body>` (e.g. "AddRecipient"); the initialisers refuse one that is not an XML name.
    public var operation: String
    /// The parameters, each an element inside the operation, in the order first added (`addParams`).
    public private(set) var params: [Param] = []
    /// The `<COLUMN><NAME>…</NAME><VALUE>…</VALUE></COLUMN>` pairs written after the parameters, in the order first added (`addColumns`).
    public private(set) var columns: [Column] = []
    /// InsertUpdateRelationalTable's `<ROWS><ROW><COLUMN name="...">value</COLUMN>...`.
    public private(set) var rows: [[Column]] = []

    /// One parameter, written `<name>value</name>`.
    public struct Param: Equatable, Sendable, Codable {
        /// The element name (e.g. LIST_ID): letters, digits, '_', '-', '.', not starting with a digit.
        public var name: String
        /// The element's text as given; escaped when the request is written.
        public var value: String
    }

    /// One column name/value pair: of the recipient (`columns`) or of a relational-table row (`rows`).
    public struct Column: Equatable, Sendable, Codable {
        /// The column's name in the list or table, any text; escaped when the request is written.
        public var name: String
        /// The column's value as given; escaped when the request is written.
        public var value: String
        /// The column `name` with `value`.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A name that cannot be an XML element name (parameters become elements).
    public struct InvalidName: Error, CustomStringConvertible {
        /// The name refused, as given.
        public var name: String
        public var description: String { "'\(name)' is not a valid XMLAPI element name (letters, digits, '_', '-', '.', not starting with a digit)" }
    }

    /// `resourceNamed:`
    public init(_ operation: String) throws {
        try Self.checkName(operation)
        self.operation = operation
    }

    /// `resourceNamed:params:`; a "COLUMNS" entry of the Engage SDK's dictionary form is `columns`.
    public init(_ operation: String, params: [(String, String)], columns: [(String, String)] = []) throws {
        try self.init(operation)
        try addParams(params)
        addColumns(columns)
    }

    /// `addParams:`: a name given again replaces its value, keeping its place.
    public mutating func addParams(_ given: [(String, String)]) throws {
        for (name, value) in given {
            try Self.checkName(name)
            if let index = params.firstIndex(where: { $0.name == name }) {
                params[index].value = value
            } else {
                params.append(Param(name: name, value: value))
            }
        }
    }

    /// `addColumns:`: a name given again replaces its value. Column names are values (escaped),
    /// so any name the list has is allowed.
    public mutating func addColumns(_ given: [(String, String)]) {
        for (name, value) in given {
            if let index = columns.firstIndex(where: { $0.name == name }) {
                columns[index].value = value
            } else {
                columns.append(Column(name: name, value: value))
            }
        }
    }

    /// One relational-table row (InsertUpdateRelationalTable).
    public mutating func addRow(_ row: [(String, String)]) {
        rows.append(row.map { Column(name: $0.0, value: $0.1) })
    }

    /// `selectRecipientData:list:`
    public static func selectRecipientData(email: String, list: String) -> XMLAPIResource {
        // The names are constants, valid by construction.
        try! XMLAPIResource(XMLAPIOperation.selectRecipientData, params: [("LIST_ID", list), ("EMAIL", email)])
    }

    /// The request document.
    public var xml: String {
        var out = "<Envelope><Body><\(operation)>"
        for param in params { out += "<\(param.name)>\(Self.escape(param.value))</\(param.name)>" }
        for column in columns { out += "<COLUMN><NAME>\(Self.escape(column.name))</NAME><VALUE>\(Self.escape(column.value))</VALUE></COLUMN>" }
        if !rows.isEmpty {
            out += "<ROWS>"
            for row in rows {
                out += "<ROW>"
                for column in row { out += "<COLUMN name=\"\(Self.escape(column.name))\">\(Self.escape(column.value))</COLUMN>" }
                out += "</ROW>"
            }
            out += "</ROWS>"
        }
        return out + "</\(operation)></Body></Envelope>"
    }

    /// Escapes the five XML special characters (as HTMLEscape does, valid XML entities), keeps a
    /// carriage return as `&#13;` (a raw one is read back as a newline), and drops the characters
    /// XML 1.0 cannot carry at all (other control characters), which no escape could save.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0D: out += "&#13;"
            case 0x09, 0x0A: out.unicodeScalars.append(scalar)
            case 0..<0x20, 0xFFFE, 0xFFFF: continue
            default: HTMLEscape.append(Character(scalar), to: &out)
            }
        }
        return out
    }

    static func checkName(_ name: String) throws {
        guard let first = name.unicodeScalars.first, name.count <= 128,
            CharacterSet.letters.contains(first) || first == "_",
            name.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_-.".unicodeScalars.contains($0)) })
        else { throw InvalidName(name: name) }
    }
}

/// The operation names hubhost uses (the Engage SDK's `XMLAPIOperation` constants).
package enum XMLAPIOperation {
    package static let addRecipient = "AddRecipient"
    package static let selectRecipientData = "SelectRecipientData"
    package static let updateRecipient = "UpdateRecipient"
    package static let insertUpdateRelationalTable = "InsertUpdateRelationalTable"
}
