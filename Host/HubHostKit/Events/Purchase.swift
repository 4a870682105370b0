import Foundation

/// The pre-defined properties of a purchase_successful event (Rakuten In-App Messaging's
/// PurchaseSuccessfulEvent: purchase amount, number of items, currency code, item list). They
/// travel as typed attributes with fixed names, so campaign triggers compare them like any other
/// attribute (`purchaseAmount GREATER_THAN 40`, `currencyCode EQUALS USD`, `itemList
/// MATCHES_REGEX (^|,)hammer(,|$)`), and a purchase event whose properties have the wrong type is
/// refused before anything is stored.
public struct Purchase: Codable, Equatable, Sendable {
    /// Attribute names.
    public enum Field {
        /// The purchase amount, an integer (`Purchase.amount`).
        public static let amount = "purchaseAmount"  // int
        /// The number of items, an integer (`Purchase.numberOfItems`; the item list's length when not given).
        public static let numberOfItems = "numberOfItems"  // int, default: the item list's length
        /// The ISO 4217 currency code, a string of three capital letters (`Purchase.currencyCode`).
        public static let currencyCode = "currencyCode"  // string, ISO 4217: three letters
        /// The item ids joined with ",", a string (`Purchase.itemList`).
        public static let itemList = "itemList"  // string: the item ids joined with ","
        package static let all: [String: ConfigType] = [amount: .int, numberOfItems: .int, currencyCode: .string, itemList: .string]
    }

    /// A purchase refused before anything is stored: a property of the wrong type, a negative amount or count, a bad currency
    /// code or item id; `description` says which and why.
    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
    }

    /// The purchase amount, a whole number, 0 or more; campaign triggers compare it as sent (`purchaseAmount`).
    public var amount: Int64
    /// The number of items, 0 or more; nil: the number of ids in `itemList`.
    public var numberOfItems: Int64?
    /// The ISO 4217 currency code: three capital letters, e.g. `USD`.
    public var currencyCode: String
    /// The ids of the items bought, in order; none may be empty or contain ",".
    public var itemList: [String]

    /// A purchase; nothing is checked until `attributes()` (or `Event.purchaseSuccessful`) throws `Invalid`.
    public init(amount: Int64, numberOfItems: Int64? = nil, currencyCode: String, itemList: [String] = []) {
        self.amount = amount
        self.numberOfItems = numberOfItems
        self.currencyCode = currencyCode
        self.itemList = itemList
    }

    /// The attributes this purchase adds to its event; throws Invalid for a bad currency code, a
    /// negative amount or count, or an item id that is empty or holds the list's separator.
    public func attributes() throws -> [Event.Attribute] {
        guard amount >= 0 else { throw Invalid(description: "purchase amount \(amount) is negative") }
        if let numberOfItems, numberOfItems < 0 { throw Invalid(description: "number of items \(numberOfItems) is negative") }
        try Self.checkCurrency(currencyCode)
        for item in itemList where item.isEmpty || item.contains(",") {
            throw Invalid(description: "item id '\(item)' is empty or contains ',' (the item list's separator)")
        }
        return [
            .init(Field.amount, .int(amount)), .init(Field.numberOfItems, .int(numberOfItems ?? Int64(itemList.count))),
            .init(Field.currencyCode, .string(currencyCode)), .init(Field.itemList, .string(itemList.joined(separator: ",")))
        ]
    }

    static func checkCurrency(_ code: String) throws {
        guard code.count == 3, code.allSatisfy({ $0.isASCII && $0.isUppercase }) else {
            throw Invalid(description: "currency code '\(code)' is not an ISO 4217 code (three capital letters, e.g. USD)")
        }
    }

    /// Checks the purchase properties an event carries (any it lacks are fine): each must have its
    /// type, and the currency code must be a code. Other event types are not checked.
    public static func validate(_ event: Event) throws {
        guard event.type == .purchaseSuccessful else { return }
        for attribute in event.attributes {
            guard let expected = Field.all[attribute.name] else { continue }
            switch (expected, attribute.value) {
            case (.int, .int(let n)):
                if n < 0 { throw Invalid(description: "purchase_successful: '\(attribute.name)' is negative (\(n))") }
            case (.string, .string(let text)):
                if attribute.name == Field.currencyCode { try checkCurrency(text) }
            default:
                throw Invalid(
                    description:
                        "purchase_successful: '\(attribute.name)' must be \(expected == .int ? "an integer" : "a string"), not \(attribute.value.typeName)"
                )
            }
        }
    }
}

extension Event {
    /// A purchase_successful event with the purchase's typed properties (and any other attributes).
    public static func purchaseSuccessful(_ purchase: Purchase, name: String = "", attributes: [Attribute] = []) throws -> Event {
        Event(type: .purchaseSuccessful, name: name, attributes: try purchase.attributes() + attributes)
    }
}
