import ArgumentParser
import Foundation
import HubHostKit

extension EventView {
    func printText() {
        print("\(id)  \(status)  \(type) (\(typeCode))\(name.isEmpty ? "" : " \"\(name)\"")  \(timestamp)")
        for (key, value) in attributes.sorted(by: { $0.key < $1.key }) { print("    \(key): \(value.text)") }
        if let lastError { print("    last error: \(lastError)") }
    }
}

extension JSONValue {
    var text: String {
        switch self {
        case .null: return "null"
        case .string(let s): return s
        case .number(let d): return d == d.rounded() && abs(d) < 9e15 ? String(Int64(d)) : String(d)
        case .bool(let b): return String(b)
        case .array(let a): return "[" + a.map(\.text).joined(separator: ", ") + "]"
        case .object(let o): return "{" + o.map { "\($0.key): \($0.value.text)" }.joined(separator: ", ") + "}"
        }
    }
}

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

    @Option(name: .customLong("purchase-amount"), parsing: .unconditional, help: ArgumentHelp("purchase_successful: the purchase amount (integer).", valueName: "n"))
    var purchaseAmount: Int64?

    @Option(name: .customLong("currency-code"), help: ArgumentHelp("purchase_successful: the ISO 4217 currency code.", valueName: "code"))
    var currencyCode: String?

    @Option(name: .customLong("item"), help: ArgumentHelp("purchase_successful: an item id of the item list (repeat for each).", valueName: "id"))
    var items: [String] = []

    @Option(name: .customLong("number-of-items"), parsing: .unconditional, help: ArgumentHelp("purchase_successful: the number of items (default: the items given).", valueName: "n"))
    var numberOfItems: Int64?

    @Flag(help: "Read the event(s) as JSON from standard input.")
    var stdin = false

    @Flag(name: .customLong("no-flush"), help: "Do not post a batch even when cache_size events are waiting.")
    var noFlush = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Track the event this many times, printing each id once it is on disk (load and crash tests).", valueName: "n"))
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
            throw ValidationError("unknown event type '\(typeText)'; expected one of: \(EventType.allCases.map(\.rawValue).joined(separator: ", ")) (or one argument: the name of a named_event)")
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
            guard eventType == .purchaseSuccessful else { throw ValidationError("--purchase-amount, --currency-code, --item and --number-of-items are for purchase_successful events") }
            guard let purchaseAmount, let currencyCode else { throw ValidationError("a purchase needs --purchase-amount and --currency-code") }
            let purchase = Purchase(amount: purchaseAmount, numberOfItems: numberOfItems, currencyCode: currencyCode, itemList: items)
            do { for attribute in try purchase.attributes() { event.set(attribute.name, attribute.value) } } catch { throw ValidationError("\(error)") }
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

struct EventsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "The local event store: list, count, flush, purge.",
        subcommands: [List.self, Stats.self, Flush.self, Purge.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List stored events, newest first.")

        @Option(help: ArgumentHelp("Only this status: \(EventStatus.allCases.map(\.rawValue).joined(separator: ", ")).", valueName: "status"))
        var status: String?

        @Option(parsing: .unconditional, help: "At most this many.")
        var limit: Int = 50

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func validate() throws {
            if limit < 1 { throw ValidationError("--limit must be at least 1 (got \(limit))") }
        }

        func run() throws {
            var filter: EventStatus?
            if let status {
                guard let parsed = EventStatus(rawValue: status.uppercased()) else {
                    throw ValidationError("unknown status '\(status)'; expected one of: \(EventStatus.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                filter = parsed
            }
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let events = try host.events().store.list(status: filter, limit: limit).map { EventView($0.event, lastError: $0.lastError) }
            if output.json { Output.json(events) } else if events.isEmpty { print("no events") } else { events.forEach { $0.printText() } }
        }
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Count stored events by status.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let engine = try host.events()
            let counts = try engine.store.stats()
            let byName = Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) })
            if output.json {
                Output.json(["path": JSONValue.string(engine.store.path), "counts": .object(byName.mapValues { .number(Double($0)) })])
            } else {
                print("store: \(engine.store.path)")
                Output.table(["STATUS", "EVENTS"], EventStatus.allCases.map { [$0.rawValue, String(counts[$0] ?? 0)] })
            }
        }
    }

    struct Flush: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Post every event that is due to the collector now.",
                                                        discussion: "Exits 1 when a batch failed.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let report = try host.events().flush()
            if output.json {
                Output.json(report)
            } else if report.noCollector {
                print("no collector_url in events: nothing posted; events stay NOT_POSTED on disk")
            } else {
                print("posted \(report.posted) in \(report.batches) batch\(report.batches == 1 ? "" : "es"); \(report.retrying) to retry, \(report.failed) now FAILED_POST\(report.lastError.map { "; last error: \($0)" } ?? "")")
            }
            if report.lastError != nil { throw ExitCode(1) }
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete SUCCESSFULLY_POSTED events older than expire_local_events_after.")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func run() throws {
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let purged = try host.events().purge()
            if output.json { Output.json(["purged": purged]) } else { print("purged \(purged) posted event\(purged == 1 ? "" : "s")") }
        }
    }
}

struct OpenURLCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open-url",
        abstract: "Handle an opened URL (deep link): track it and take its CurrentCampaign parameter.")

    @Argument(help: "The URL.")
    var url: String

    @OptionGroup var manifestOption: ManifestOption
    @OptionGroup var output: JSONFlag

    func run() throws {
        let host = try manifestOption.startHost()
        defer { host.shutdown() }
        let (event, note) = try host.events().openURL(url)
        if output.json { Output.json(EventView(event)) } else { EventView(event).printText() }
        if let note { Output.error(note) }
    }
}

/// `hubhost notifications received|opened`: a push notification's payload (its events and its
/// CurrentCampaign). `hubhost notification received|opened`, the old name, stays as a hidden alias.
struct NotificationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notification",
        abstract: "The old name of `hubhost notifications received|opened`.",
        shouldDisplay: false,
        subcommands: [Received.self, Opened.self])

    /// The payload and the options both actions take.
    struct Payload: ParsableArguments {
        @Argument(help: ArgumentHelp("Payload entries (instead of a JSON object on stdin).", valueName: "key=value"))
        var entries: [String] = []

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        func handle(opened: Bool) throws {
            var payload: [String: String] = [:]
            if entries.isEmpty {
                let data = FileHandle.standardInput.readDataToEndOfFile()
                guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                    throw ValidationError("expected a JSON object on stdin, or key=value arguments")
                }
                for (key, value) in object { payload[key] = "\(value)" }
            } else {
                for entry in entries {
                    guard let equals = entry.firstIndex(of: "=") else { throw ValidationError("\(entry): expected key=value") }
                    payload[String(entry[..<equals])] = String(entry[entry.index(after: equals)...])
                }
            }
            let host = try manifestOption.startHost()
            defer { host.shutdown() }
            let event = try host.events().notification(opened: opened, payload: payload)
            if output.json { Output.json(EventView(event)) } else { EventView(event).printText() }
        }
    }

    struct Received: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A push notification was received: track it, and take its CurrentCampaign (JSON object on stdin, or key=value arguments).")

        @OptionGroup var payload: Payload

        func run() throws { try payload.handle(opened: false) }
    }

    struct Opened: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A push notification was opened: track it, and take its CurrentCampaign (JSON object on stdin, or key=value arguments).")

        @OptionGroup var payload: Payload

        func run() throws { try payload.handle(opened: true) }
    }
}

struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "config", abstract: "Show the effective configuration.",
                                                    subcommands: [Show.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Each event setting's effective value and where it came from (default or manifest line).")

        @OptionGroup var manifestOption: ManifestOption
        @OptionGroup var output: JSONFlag

        struct Row: Encodable {
            var key: String
            var value: JSONValue
            var source: String
            var doc: String
        }

        func run() throws {
            let manifest: HostManifest
            do { manifest = try HostManifest.load(path: manifestOption.manifest) } catch let error as ManifestError {
                Output.error(error.description)
                throw ExitCode(2)
            }
            let settings = manifest.events
            let rows = EventSettings.schema.keys.map { key in
                Row(key: "events.\(key.key)", value: settings.values[key.key]?.json ?? .null,
                    source: settings.lines[key.key].map { "\(manifest.file):\($0)" } ?? "default", doc: key.doc)
            } + [Row(key: "server.host", value: .string(manifest.server.host), source: "manifest or default", doc: "Where hubhost serve listens."),
                 Row(key: "server.port", value: .number(Double(manifest.server.port)), source: "manifest or default", doc: "0 picks a free port.")]
            if output.json { Output.json(rows) } else {
                Output.table(["KEY", "VALUE", "SOURCE"], rows.map { [$0.key, $0.value.text, $0.source] })
            }
            for diagnostic in manifest.diagnostics { Output.error("\(diagnostic)") }
        }
    }
}
