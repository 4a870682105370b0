import ArgumentParser
import Foundation
import HubHostKit

struct TrackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "track",
        abstract: "Track an event: stored durably, augmented, then delivered in batches.",
        discussion: """
            Give the type and name with attributes as typed flags, or a whole event (or a list) as JSON on \
            stdin with --stdin. Types: \(EventType.allCases.map(\.rawValue).joined(separator: ", ")) (or a code, e.g. 17). \
            With one argument that is not a type, the type is named_event and the argument its name.
            Example: hubhost track named_event "PLAYER LOADED" --int Level=3 --string Mode=arcade
            Example: hubhost track "PLAYER LOADED" --int Level=3
            """)

    @Argument(help: "The event type (default named_event; alone and not a type: the name of a named_event).")
    var type: String?

    @Argument(help: "The event name.")
    var name: String?

    @Option(name: .customLong("string"), help: ArgumentHelp("A string attribute.", valueName: "name=value"))
    var strings: [String] = []
    @Option(name: .customLong("int"), help: ArgumentHelp("An integer attribute.", valueName: "name=value"))
    var ints: [String] = []
    @Option(name: .customLong("double"), help: ArgumentHelp("A floating-point attribute.", valueName: "name=value"))
    var doubles: [String] = []
    @Option(name: .customLong("bool"), help: ArgumentHelp("A boolean attribute (true/false).", valueName: "name=value"))
    var bools: [String] = []
    @Option(name: .customLong("time"), help: ArgumentHelp("A time attribute: ms since epoch or ISO 8601.", valueName: "name=value"))
    var times: [String] = []

    @Option(
        name: .customLong("purchase-amount"), parsing: .unconditional,
        help: ArgumentHelp("purchase_successful: the purchase amount (integer).", valueName: "n"))
    var purchaseAmount: Int64?

    @Option(name: .customLong("currency-code"), help: ArgumentHelp("purchase_successful: the ISO 4217 currency code.", valueName: "code"))
    var currencyCode: String?

    @Option(name: .customLong("item"), help: ArgumentHelp("purchase_successful: an item id of the item list (repeat for each).", valueName: "id"))
    var items: [String] = []

    @Option(
        name: .customLong("number-of-items"), parsing: .unconditional,
        help: ArgumentHelp("purchase_successful: the number of items (default: the items given).", valueName: "n"))
    var numberOfItems: Int64?

    @Flag(help: "Read the event(s) as JSON from standard input.")
    var stdin = false

    @Flag(name: .customLong("no-flush"), help: "Do not post a batch even when cache_size events are waiting.")
    var noFlush = false

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Track the event this many times, printing each id once it is on disk (load and crash tests).", valueName: "n"))
    var `repeat`: Int?

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    func validate() throws {
        if let count = `repeat`, count < 0 { throw ValidationError("--repeat must be 0 or more (got \(count))") }
    }

    func events() throws -> [Event] {
        if stdin {
            let data = FileHandle.standardInput.readDataToEndOfFile()
            do { return try EventInput.parse(data) } catch { throw ValidationError("\(error)") }
        }
        var typeText = type ?? "named_event"
        var eventName = name ?? ""
        if let type, name == nil, EventType(text: type) == nil {
            // One argument that is not a type: the name of a named_event (the type's default).
            typeText = "named_event"
            eventName = type
        }
        guard let eventType = EventType(text: typeText) else {
            throw ValidationError(
                "unknown event type '\(typeText)'; expected one of: \(EventType.allCases.map(\.rawValue).joined(separator: ", ")) (or one argument: the name of a named_event)"
            )
        }
        var event = Event(type: eventType, name: eventName)
        func pairs(_ list: [String], _ kind: String) throws -> [(String, String)] {
            try list.map { item in
                guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                    throw ValidationError("--\(kind) \(item): expected name=value")
                }
                return (String(item[..<equals]), String(item[item.index(after: equals)...]))
            }
        }
        for (key, value) in try pairs(strings, "string") { event.set(key, .string(value)) }
        for (key, value) in try pairs(ints, "int") {
            guard let number = Int64(value) else { throw ValidationError("--int \(key)=\(value): not an integer") }
            event.set(key, .int(number))
        }
        for (key, value) in try pairs(doubles, "double") {
            guard let number = Double(value), number.isFinite else { throw ValidationError("--double \(key)=\(value): not a number") }
            event.set(key, .double(number))
        }
        for (key, value) in try pairs(bools, "bool") {
            guard let flag = Bool(value.lowercased()) else { throw ValidationError("--bool \(key)=\(value): use true or false") }
            event.set(key, .bool(flag))
        }
        for (key, value) in try pairs(times, "time") {
            do { event.set(key, .timeMs(try EventInput.time(value, what: "--time \(key)"))) } catch { throw ValidationError("\(error)") }
        }
        if purchaseAmount != nil || currencyCode != nil || !items.isEmpty || numberOfItems != nil {
            guard eventType == .purchaseSuccessful else {
                throw ValidationError("--purchase-amount, --currency-code, --item and --number-of-items are for purchase_successful events")
            }
            guard let purchaseAmount, let currencyCode else { throw ValidationError("a purchase needs --purchase-amount and --currency-code") }
            let purchase = Purchase(amount: purchaseAmount, numberOfItems: numberOfItems, currencyCode: currencyCode, itemList: items)
            do { for attribute in try purchase.attributes() { event.set(attribute.name, attribute.value) } } catch {
                throw ValidationError("\(error)")
            }
        }
        do { try Purchase.validate(event) } catch { throw ValidationError("\(error)") }
        return [event]
    }

    func run() throws {
        let events = try events()
        let host = try manifestOption.startHost()
        defer { host.shutdown() }
        let engine = try host.events()
        if let count = `repeat` {
            // One line per acknowledged event, written as soon as it is on disk.
            for _ in 0..<max(0, count) {
                for event in events {
                    var copy = event
                    copy.id = EventID.make()
                    copy.timestampMs = Clock.wallMs()
                    let stored = try engine.track(copy, autoFlush: !noFlush)
                    FileHandle.standardOutput.write(Data((stored.id + "\n").utf8))
                }
            }
            return
        }
        // One transaction: stored whole or not at all, even beside a running serve.
        let tracked = try engine.trackBatch(events)
        if !noFlush { try engine.flushIfDue() }
        // Delivery may have posted them meanwhile: show each as stored now.
        let views = try tracked.map { event -> EventView in
            let stored = try engine.store.event(id: event.id)
            return EventView(stored?.event ?? event, lastError: stored?.lastError)
        }
        if output.json {
            if views.count == 1 { Output.json(views[0]) } else { Output.json(views) }
        } else {
            views.forEach { $0.printText() }
        }
    }
}
