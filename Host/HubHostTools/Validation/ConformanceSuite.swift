import Foundation
import HubHostABI
import HubHostKit
import Synchronization

/// The conformance tests of `hubhost plugins test`, built for a target: library checks first, then,
/// for every plugin the library exports, lifecycle tests and the tests of its kind.
public enum ConformanceSuite {
    /// Create/destroy cycles in the repeated-lifecycle test: this many, or as many as
    /// `lifecycleSeconds` allow when a cycle is slow (a network client whose close waits for its
    /// reconnect thread takes 100-200 ms), but never fewer than `minimumLifecycleCycles`.
    static let lifecycleCycles = 200
    static let lifecycleSeconds = 3.0
    static let minimumLifecycleCycles = 20
    /// Records in the logging flood test.
    static let floodRecords = 20_000

    /// `exports` are the plugins to test: what the binary exports when it loads, else the manifest's.
    public static func tests(for target: ValidationTarget, exports: [(id: String, kind: PluginKind)]) -> [ConformanceTest] {
        var tests: [ConformanceTest] = [
            ConformanceTest("library/load", "dlopen (or parse a .wasm), the entry symbol, the ABI version and valid descriptors") { context in
                _ = try context.library()
            }
        ]
        if target.manifest != nil || !target.manifestProblems.isEmpty {
            tests.append(
                ConformanceTest("library/manifest-agrees", "plugin.yaml is valid and agrees with the binary (ids, kinds, versions)") { context in
                    if !context.target.manifestProblems.isEmpty {
                        throw ConformanceFailure(context.target.manifestProblems.map(\.description).joined(separator: "; "))
                    }
                    let problems = try context.library().disagreements(with: context.target.manifest!)
                    if !problems.isEmpty { throw ConformanceFailure(problems.joined(separator: "; ")) }
                })
        }
        for (id, kind) in exports {
            tests += lifecycleTests(id)
            tests += kindTests(id, kind)
        }
        return tests
    }

    // MARK: Lifecycle, every kind

    static func lifecycleTests(_ id: String) -> [ConformanceTest] {
        [
            ConformanceTest("\(id)/create-destroy", "create with a valid config, then destroy") { context in
                try context.create(id, config: context.target.validConfig)?.destroy()
            },
            ConformanceTest(
                "\(id)/create-destroy-repeated",
                "\(lifecycleCycles) create/destroy cycles with a valid config (at least \(minimumLifecycleCycles) when they take over \(Int(lifecycleSeconds)) s)"
            ) { context in
                let start = Date()
                for cycle in 0..<lifecycleCycles {
                    if cycle >= minimumLifecycleCycles, Date().timeIntervalSince(start) > lifecycleSeconds { break }
                    guard let instance = try context.create(id, config: context.target.validConfig) else { return }
                    context.budget.run("\(id).destroy") { instance.destroy() }
                }
            },
            ConformanceTest("\(id)/create-missing-config", "create with no config at all: succeeds, or fails with a message") { context in
                try context.create(id, config: [:], allowFailure: true)?.destroy()
            },
            ConformanceTest("\(id)/create-wrong-config", "create with every config key of the wrong type: succeeds, or fails with a message") {
                context in
                let keys = context.target.manifest?.config.keys.map(\.key) ?? []
                var wrong: [String: PluginValue] = [:]
                for key in keys {
                    // A type the schema does not declare for the key: the plugin must check value.type.
                    switch context.target.manifest?.config.keys.first(where: { $0.key == key })?.type {
                    case .string?: wrong[key] = .int(7)
                    case .bool?: wrong[key] = .string("yes")
                    default: wrong[key] = .string("not a number")
                    }
                }
                try context.create(id, config: wrong, allowFailure: true)?.destroy()
            }
        ]
    }

    // MARK: By kind

    static func kindTests(_ id: String, _ kind: PluginKind) -> [ConformanceTest] {
        switch kind {
        case .augmentation: return augmentationTests(id)
        case .triggerOperator: return operatorTests(id)
        case .logging: return loggingTests(id)
        case .advertiserID: return advertiserTests(id)
        case .location: return locationTests(id)
        case .contentProvider: return providerTests(id)
        case .userIDGenerator: return userIDGeneratorTests(id)
        case .deviceConditions: return deviceConditionsTests(id)
        case .downloadRequest: return downloadRequestTests(id)
        case .eventSink: return sinkTests(id)
        }
    }

    /// Creates a valid instance, runs `body`, destroys it.
    static func withInstance(_ id: String, _ context: ConformanceContext, _ body: (PluginHandle) throws -> Void) throws {
        guard let instance = try context.create(id, config: context.target.validConfig) else { return }
        defer { context.budget.run("\(id).destroy") { instance.destroy() } }
        try body(instance)
    }

    static func augmentationTests(_ id: String) -> [ConformanceTest] {
        func augmentCase(_ name: String, _ summary: String, _ event: @escaping @Sendable () -> AugmentableEvent) -> ConformanceTest {
            ConformanceTest("\(id)/\(name)", summary) { context in
                try withInstance(id, context) { instance in
                    let plugin = AugmentationPlugin(instance)
                    _ = context.budget.run("\(id).process_synchronously") { plugin.processSynchronously }
                    _ = context.budget.run("\(id).is_supplemental_data_ready") { plugin.isSupplementalDataReady }
                    let outcome = context.budget.run("\(id).augment") { plugin.augment(event()) }
                    try context.checkStatus(outcome.status, call: "\(id).augment")
                }
            }
        }
        let large = String(repeating: "x", count: 1 << 20)
        return [
            augmentCase("augment-empty", "augment an event with no name and no attributes") {
                AugmentableEvent(id: "e-empty", typeCode: 17, name: "", timeMs: 0)
            },
            augmentCase("augment-large", "augment an event with a 1 MiB attribute") {
                AugmentableEvent(id: "e-large", typeCode: 17, name: "LARGE", timeMs: 1_402_358_400_000, attributes: [("Blob", .string(large))])
            },
            augmentCase("augment-every-type", "augment an event with one attribute of every value type") {
                AugmentableEvent(
                    id: "e-types", typeCode: 17, name: "TYPES", timeMs: 1_402_358_400_000,
                    attributes: [
                        ("s", .string("text")), ("i", .int(-42)), ("d", .double(3.5)), ("b", .bool(true)), ("t", .timeMs(1_402_358_400_000)),
                        ("n", .null)
                    ])
            },
            ConformanceTest("\(id)/augment-non-utf8", "augment an event whose attribute bytes are not UTF-8") { context in
                try withInstance(id, context) { instance in
                    let status = context.budget.run("\(id).augment") { NonUTF8Event.augment(instance) }
                    try context.checkStatus(status, call: "\(id).augment")
                }
            },
            ConformanceTest("\(id)/augment-concurrent", "augment from 8 threads at once ([thread-safe])") { context in
                try withInstance(id, context) { instance in
                    let plugin = AugmentationPlugin(instance)
                    try context.concurrently(iterations: 200) { n in
                        let event = AugmentableEvent(
                            id: "e-\(n)", typeCode: 17, name: "CONCURRENT", timeMs: Int64(n), attributes: [("n", .int(Int64(n)))])
                        let outcome = context.budget.run("\(id).augment") { plugin.augment(event) }
                        try context.checkStatus(outcome.status, call: "\(id).augment")
                        if outcome.status == HH_OK, outcome.event[attribute: "n"] != .int(Int64(n)) {
                            throw ConformanceFailure("augment under concurrency changed another event's attribute 'n'")
                        }
                    }
                }
            }
        ]
    }

    static func operatorTests(_ id: String) -> [ConformanceTest] {
        let samples: [PluginValue] = [.null, .string("text"), .string(""), .int(42), .double(4.5), .bool(true), .timeMs(1_402_358_400_000)]
        return [
            ConformanceTest("\(id)/compare-every-type", "compare every pair of value types, mismatched ones included") { context in
                try withInstance(id, context) { instance in
                    let op = TriggerOperatorPlugin(instance)
                    for event in samples {
                        for trigger in samples {
                            let answer = context.budget.run("\(id).compare(\(event.typeName), \(trigger.typeName))") {
                                op.compare(event: event, trigger: trigger)
                            }
                            try context.checkStatus(answer.status, call: "\(id).compare(\(event.typeName), \(trigger.typeName))")
                        }
                    }
                }
            },
            ConformanceTest("\(id)/compare-concurrent", "compare from 8 threads at once ([thread-safe]), answers stable") { context in
                try withInstance(id, context) { instance in
                    let op = TriggerOperatorPlugin(instance)
                    let expected = samples.map { event in samples.map { op.compare(event: event, trigger: $0).result } }
                    try context.concurrently(iterations: 100) { n in
                        let e = n % samples.count
                        let t = (n / samples.count) % samples.count
                        let answer = context.budget.run("\(id).compare") { op.compare(event: samples[e], trigger: samples[t]) }
                        if answer.result != expected[e][t] {
                            throw ConformanceFailure("compare(\(samples[e]), \(samples[t])) answered differently under concurrency")
                        }
                    }
                }
            }
        ]
    }

    static func loggingTests(_ id: String) -> [ConformanceTest] {
        [
            ConformanceTest("\(id)/log-flood", "\(floodRecords) records, then flush") { context in
                try withInstance(id, context) { instance in
                    let plugin = LoggingPlugin(instance)
                    let long = String(repeating: "é", count: 4096)
                    for i in 0..<floodRecords {
                        let record = LogRecord(
                            severity: .error, verbosity: .debug, timeMs: Clock.wallMs(), source: "flood",
                            message: i % 100 == 0 ? long : "record \(i) with \"quotes\" and a\nnewline")
                        context.budget.run("\(id).log") { plugin.write(record) }
                    }
                    context.budget.run("\(id).flush") { plugin.flush() }
                }
            },
            ConformanceTest("\(id)/log-threads", "records from 8 threads, serialized by the host ([host-serialized])") { context in
                try withInstance(id, context) { instance in
                    let plugin = LoggingPlugin(instance)
                    try context.concurrently(iterations: 250) { n in
                        context.budget.run("\(id).log") {
                            plugin.write(
                                LogRecord(severity: .warning, verbosity: .debug, timeMs: Clock.wallMs(), source: "thread", message: "record \(n)"))
                        }
                    }
                    context.budget.run("\(id).flush") { plugin.flush() }
                }
            }
        ]
    }

    static func advertiserTests(_ id: String) -> [ConformanceTest] {
        [
            ConformanceTest("\(id)/advertiser-id-concurrent", "asked from 8 threads at once ([thread-safe]), answers stable") { context in
                try withInstance(id, context) { instance in
                    let plugin = AdvertiserIDPlugin(instance)
                    let first = context.budget.run("\(id).advertiser_id") { plugin.answer() }
                    if case .failed(let status, let message) = first {
                        try context.checkStatus(status, call: "\(id).advertiser_id")
                        throw ConformanceFailure("advertiser_id failed with a valid config (\(StatusCode.name(status))): \(message)")
                    }
                    try context.concurrently(iterations: 250) { _ in
                        let answer = context.budget.run("\(id).advertiser_id") { plugin.answer() }
                        if answer != first { throw ConformanceFailure("advertiser_id answered \(answer), then \(first), with nothing changed") }
                    }
                }
            }
        ]
    }

    static func userIDGeneratorTests(_ id: String) -> [ConformanceTest] {
        [
            ConformanceTest(
                "\(id)/generate-unique", "generate from 8 threads at once ([thread-safe]): 2,000 ids, each 1 to 1024 bytes, none repeated"
            ) { context in
                try withInstance(id, context) { instance in
                    let plugin = UserIDGeneratorPlugin(instance)
                    final class Seen: Sendable {
                        let ids = Mutex(Set<String>())
                    }
                    let seen = Seen()
                    try context.concurrently(iterations: 250) { _ in
                        switch context.budget.run("\(id).generate", { plugin.answer() }) {
                        case .id(let generated):
                            let fresh = seen.ids.withLock { $0.insert(generated).inserted }
                            if !fresh { throw ConformanceFailure("generate answered '\(generated)' twice") }
                        case .failed(let status, let message):
                            try context.checkStatus(status, call: "\(id).generate")
                            throw ConformanceFailure("generate failed with a valid config (\(StatusCode.name(status))): \(message)")
                        }
                    }
                }
            }
        ]
    }

    static func locationTests(_ id: String) -> [ConformanceTest] {
        [
            ConformanceTest("\(id)/location-concurrent", "asked from 8 threads at once ([thread-safe]); coordinates in range") { context in
                try withInstance(id, context) { instance in
                    let plugin = LocationPlugin(instance)
                    let first = context.budget.run("\(id).get_location") { plugin.current() }
                    switch first {
                    case .failed(let status, _): try context.checkStatus(status, call: "\(id).get_location")
                    case .location(let location):
                        if let lat = location.latitude, let lon = location.longitude, !(-90...90).contains(lat) || !(-180...180).contains(lon) {
                            throw ConformanceFailure("get_location answered latitude \(lat), longitude \(lon): out of range")
                        }
                    case .unavailable: break
                    }
                    try context.concurrently(iterations: 250) { _ in
                        let answer = context.budget.run("\(id).get_location") { plugin.current() }
                        if case .failed(let status, _) = answer { try context.checkStatus(status, call: "\(id).get_location") }
                    }
                }
            }
        ]
    }

    static func providerTests(_ id: String) -> [ConformanceTest] {
        [
            ConformanceTest("\(id)/fetch-unknown-resource", "fetch a resource that does not exist: a status, no crash") { context in
                try withInstance(id, context) { instance in
                    let fetched = context.budget.run("\(id).fetch") { ContentProviderPlugin(instance).fetch("no-such-resource-\(UUID().uuidString)") }
                    try context.checkStatus(fetched.status, call: "\(id).fetch")
                    if fetched.status == HH_OK { throw ConformanceFailure("fetch of a resource that does not exist answered HH_OK") }
                }
            }
        ]
    }
}

// MARK: ABI 1.1 kinds

extension ConformanceSuite {
    /// A failure with a defined status is allowed (a plugin may not know); an invalid answer never.
    static func checkCall<T>(_ context: ConformanceContext, call: String, _ body: () throws -> T) throws -> T? {
        do {
            return try context.budget.run(call) { try body() }
        } catch let error as PluginCallError {
            if case .failed(_, let status, let message) = error {
                try context.checkStatus(status, call: call)
                if message.isEmpty {
                    throw ConformanceFailure("\(call) failed (\(StatusCode.name(status))) without explaining why: call report_error first")
                }
                return nil
            }
            throw ConformanceFailure("\(call): \(error)")
        }
    }

    static func deviceConditionsTests(_ id: String) -> [ConformanceTest] {
        [
            ConformanceTest("\(id)/read-conditions", "read the conditions at the data directory: every field in range, or a failure with a message") {
                context in
                try withInstance(id, context) { instance in
                    let plugin = DeviceConditionsPlugin(instance)
                    _ = try checkCall(context, call: "\(id).read_conditions") { try plugin.read(dataDirectory: context.dataDirectory) }
                }
            },
            ConformanceTest(
                "\(id)/read-conditions-missing-directory", "read the conditions at a directory that does not exist: in range, or a failure"
            ) { context in
                try withInstance(id, context) { instance in
                    let plugin = DeviceConditionsPlugin(instance)
                    _ = try checkCall(context, call: "\(id).read_conditions") {
                        try plugin.read(dataDirectory: context.dataDirectory + "/no/such/directory")
                    }
                }
            },
            ConformanceTest("\(id)/read-conditions-concurrent", "read from 8 threads at once ([thread-safe]): every answer in range") { context in
                try withInstance(id, context) { instance in
                    let plugin = DeviceConditionsPlugin(instance)
                    try context.concurrently(iterations: 100) { _ in
                        _ = try checkCall(context, call: "\(id).read_conditions") { try plugin.read(dataDirectory: context.dataDirectory) }
                    }
                }
            }
        ]
    }

    static func downloadRequestTests(_ id: String) -> [ConformanceTest] {
        let plain = DownloadRequest(
            url: "https://cdn.example.com/items/item-1/main.mp4", headers: ["Accept": "*/*"],
            itemId: "item-1", fileRole: "main")
        let awkward = DownloadRequest(
            url: "http://cdn.example.com/caf%C3%A9/%E2%9C%93.m3u8?x=1&y=%20#frag",
            headers: ["X-Long": String(repeating: "v", count: 8000), "x-empty": "", "X-UTF8": "café ✓"],
            itemId: "ïtem ✓ \u{1F600}", fileRole: "no-such-role")
        func convertCase(_ name: String, _ summary: String, _ request: DownloadRequest) -> ConformanceTest {
            ConformanceTest("\(id)/\(name)", summary) { context in
                try withInstance(id, context) { instance in
                    let plugin = DownloadRequestPlugin(instance)
                    _ = try checkCall(context, call: "\(id).convert") { try plugin.convert(request) }
                }
            }
        }
        return [
            convertCase("convert-plain", "convert a plain request: a valid http(s) URL and headers, or a failure with a message", plain),
            convertCase("convert-awkward", "convert a request with escapes, non-ASCII text, an 8000-byte header and an unknown file role", awkward),
            ConformanceTest("\(id)/convert-concurrent", "convert from 8 threads at once ([thread-safe]): answers stable") { context in
                try withInstance(id, context) { instance in
                    let plugin = DownloadRequestPlugin(instance)
                    let first = try checkCall(context, call: "\(id).convert") { try plugin.convert(plain) }
                    try context.concurrently(iterations: 100) { _ in
                        let answer = try checkCall(context, call: "\(id).convert") { try plugin.convert(plain) }
                        if answer != first {
                            throw ConformanceFailure(
                                "convert answered \(String(describing: answer)), then \(String(describing: first)), for the same request")
                        }
                    }
                }
            }
        ]
    }
}

extension ConformanceSuite {
    /// A sink batch: `count` events of two users, the last with no user id at all.
    static func sinkBatch(_ count: Int, prefix: String) -> [SinkEvent] {
        (0..<count).map { n in
            let key = "\(prefix)-\(n)-\(UUID().uuidString)"
            let json =
                #"{"attributes":[{"name":"Event Name","value":"CONFORMANCE \#(n)"}],"eventTimestamp":"2014-06-10T00:00:00.000Z","eventTypeCode":"17","idempotencyKey":"\#(key)"}"#
            return SinkEvent(
                idempotencyKey: key, typeCode: 17, timeMs: 1_402_358_400_000 + Int64(n), json: Data(json.utf8),
                mobileUserID: n == count - 1 ? "" : "user-\(n % 2)", anonymousID: n == count - 1 ? "" : "device-\(n % 2)")
        }
    }

    /// Deadline the suite gives a sink's deliver call (timeout_ms): a sink with nowhere to send
    /// answers retry within it.
    static let sinkTimeoutMs: UInt32 = 1000

    /// Fails on an undefined status or outcome code, and on a count of answers that is not the batch's.
    static func checkSinkAnswer(_ answer: SinkAnswer, _ count: Int, _ call: String, _ context: ConformanceContext) throws {
        try context.checkStatus(answer.status, call: call)
        if let code = answer.undefinedOutcomes.first {
            throw ConformanceFailure(
                "\(call) answered outcome \(code), which the ABI does not define (HH_SINK_DELIVERED, HH_SINK_RETRY or HH_SINK_REJECTED)")
        }
        if answer.outcomes.count != count { throw ConformanceFailure("\(call) answered \(answer.outcomes.count) outcomes for \(count) events") }
    }

    static func sinkTests(_ id: String) -> [ConformanceTest] {
        let check = checkSinkAnswer
        return [
            ConformanceTest("\(id)/deliver-batch", "deliver a batch of 10 events: every answer one of HH_SINK_*") { context in
                try withInstance(id, context) { instance in
                    let plugin = EventSinkPlugin(instance)
                    let answer = context.budget.run("\(id).deliver") { plugin.deliver(sinkBatch(10, prefix: "batch"), timeoutMs: sinkTimeoutMs) }
                    try check(answer, 10, "\(id).deliver", context)
                }
            },
            ConformanceTest("\(id)/deliver-one", "deliver single events, one after another ([host-serialized])") { context in
                try withInstance(id, context) { instance in
                    let plugin = EventSinkPlugin(instance)
                    for n in 0..<5 {
                        let answer = context.budget.run("\(id).deliver") {
                            plugin.deliver(sinkBatch(1, prefix: "one-\(n)"), timeoutMs: sinkTimeoutMs)
                        }
                        try check(answer, 1, "\(id).deliver", context)
                    }
                }
            },
            ConformanceTest("\(id)/deliver-largest", "deliver the largest batch the header allows (\(EventSinkPlugin.maxBatch) events)") { context in
                try withInstance(id, context) { instance in
                    let plugin = EventSinkPlugin(instance)
                    let answer = context.budget.run("\(id).deliver") {
                        plugin.deliver(sinkBatch(EventSinkPlugin.maxBatch, prefix: "large"), timeoutMs: sinkTimeoutMs)
                    }
                    try check(answer, EventSinkPlugin.maxBatch, "\(id).deliver", context)
                }
            }
        ]
    }
}

/// An augment call whose event carries bytes that are not UTF-8, which no Swift String can hold:
/// built directly on hh_event_view_t.
enum NonUTF8Event {
    static let bad: [UInt8] = [0x66, 0x6F, 0xFF, 0xFE, 0xC3, 0x28, 0x80]

    static func augment(_ handle: PluginHandle) -> hh_status_t {
        // A guest gets the same bytes in its request (its adapter builds the view from them).
        guard let instance = handle.instance else { return IsolatedCalls.augmentStatus(handle, rawStrings: bad) }
        let api = instance.api(hh_augmentation_v1_t.self)
        return bad.withUnsafeBufferPointer { bytes in
            let text = hh_string_t(data: UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self), length: bytes.count)
            var value = hh_value_t()
            value.type = HH_VALUE_STRING
            value.of.string = text
            return withUnsafePointer(to: value) { valuePointer in
                let context = NonUTF8Context(name: text, value: valuePointer)
                let data = Unmanaged.passUnretained(context).toOpaque()
                var view = hh_event_view_t(
                    event_data: data, event_id: text, type_code: 17, name: text, time_ms: 0,
                    attribute_count: { _ in 1 },
                    attribute_at: { view, index, name, value in
                        let context = Unmanaged<NonUTF8Context>.fromOpaque(view!.pointee.event_data).takeUnretainedValue()
                        guard index == 0 else { return HH_ERR_NOT_FOUND }
                        name?.pointee = context.name
                        value?.pointee = context.value.pointee
                        return HH_OK
                    },
                    get_attribute: { view, _, value in
                        let context = Unmanaged<NonUTF8Context>.fromOpaque(view!.pointee.event_data).takeUnretainedValue()
                        value?.pointee = context.value.pointee
                        return HH_OK
                    })
                var editor = hh_event_editor_t(
                    editor_data: nil,
                    set_attribute: { _, _, _ in HH_OK },
                    remove_attribute: { _, _ in HH_OK })
                return withExtendedLifetime(context) { api.pointee.augment(instance.handle, &view, &editor) }
            }
        }
    }

    final class NonUTF8Context {
        let name: hh_string_t
        let value: UnsafePointer<hh_value_t>
        init(name: hh_string_t, value: UnsafePointer<hh_value_t>) {
            self.name = name
            self.value = value
        }
    }
}
